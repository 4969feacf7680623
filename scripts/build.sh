#!/usr/bin/env bash
# A quiet `swift build`: the compiler's output goes to a log file, the terminal gets one line of progress.
#
# usage: scripts/build.sh [--log FILE] [--product NAME]... [SWIFT BUILD ARGUMENTS...]
#
#   --product NAME   build this product (repeatable: each is built in turn, `swift build --product NAME ARGUMENTS`);
#                    without --product, one `swift build ARGUMENTS` (e.g. --build-tests: everything and the tests)
#   --log FILE       where the full output goes (default .build/logs/build.log; rewritten on each run)
#
# On a terminal, one line is redrawn: the time so far, the product, SwiftPM's [done/total] count and its current
# step. Elsewhere (CI, a pipe, TERM=dumb) a line is printed every BUILD_PROGRESS_INTERVAL seconds (default 30) and one
# when a product is built. Warnings (those of dependencies included) stay in the log. When the build fails, the
# errors are printed with their source lines, then the log's path; the exit status is swift build's.
#
# Environment: SWIFT (default swift); VERBOSE=1 prints the whole output as swift build writes it (it is logged too).
set -uo pipefail

SWIFT=${SWIFT:-swift}
LOG=.build/logs/build.log
PRODUCTS=()
ARGS=()
while (($#)); do
    case $1 in
        --log) LOG=${2:?--log needs a file}; shift 2 ;;
        --log=*) LOG=${1#--log=}; shift ;;
        --product) PRODUCTS+=("${2:?--product needs a name}"); shift 2 ;;
        --product=*) PRODUCTS+=("${1#--product=}"); shift ;;
        *) ARGS+=("$1"); shift ;;
    esac
done
INTERVAL=${BUILD_PROGRESS_INTERVAL:-30}
VERBOSE=${VERBOSE:-0}

mkdir -p "$(dirname "$LOG")" || exit 1
: >"$LOG" || exit 1

TTY=0
if [[ -t 1 && ${TERM:-dumb} != dumb ]]; then TTY=1; fi
START=$SECONDS
BUILD_PID=""
LINE_SHOWN=0

clock() { local s=$((SECONDS - START)); printf '%d:%02d' $((s / 60)) $((s % 60)); }
duration() {
    local s=$((SECONDS - START))
    if ((s < 60)); then printf '%d s' "$s"; else printf '%d min %02d s' $((s / 60)) $((s % 60)); fi
}

# Erase the progress line (terminal only).
clear_line() {
    if ((LINE_SHOWN)); then printf '\r\033[K'; LINE_SHOWN=0; fi
}

on_exit() {
    if [[ -n $BUILD_PID ]]; then kill "$BUILD_PID" 2>/dev/null; wait "$BUILD_PID" 2>/dev/null; fi
    clear_line
}
trap on_exit EXIT
trap 'exit 130' INT TERM

# The step SwiftPM is at: its last "[done/total] step" line, or before the first one, what it resolves and fetches.
# Warnings and other diagnostics are never shown here.
# Only the output of the swift build running now counts: the log's bytes from OFFSET on.
OFFSET=0
current_step() {
    tail -c +$((OFFSET + 1)) "$LOG" 2>/dev/null | tail -c 65536 | LC_ALL=C grep -a -E \
        '^\[[0-9]+/[0-9]+\] |^(Fetching|Fetched|Cloning|Cloned|Computing version|Computed|Resolving|Creating working copy|Working copy|Updating|Updated|Planning build|Building for|Write swift-version|Build of product|Build complete)' |
        tail -n 1 | tr -d '\r'
}

# progress LABEL: one redrawn line on a terminal; elsewhere a line every INTERVAL seconds.
NEXT_NOTE=$((SECONDS + INTERVAL))
progress() {
    local label=$1 step width line
    step=$(current_step)
    if ((TTY)); then
        width=$(tput cols 2>/dev/null) || width=80
        [[ $width =~ ^[0-9]+$ ]] && ((width >= 20)) || width=80
        line="    $(clock)  $label  ${step:-(loading the package)}"
        printf '\r%s\033[K' "${line:0:width-1}"
        LINE_SHOWN=1
    elif ((SECONDS >= NEXT_NOTE)); then
        NEXT_NOTE=$((SECONDS + INTERVAL))
        if [[ $step =~ ^\[([0-9]+)/([0-9]+)\] ]]; then
            step="${BASH_REMATCH[1]} of ${BASH_REMATCH[2]} steps"
        fi
        printf '    %s  %s%s\n' "$(clock)" "$label" "${step:+: $step}"
    fi
}

# The errors of a failed build, each with the source lines the compiler prints under it (Swift 6's excerpts:
# "12 | code" and "   | `- error: ..."), once each, at most 80 lines; the last lines of the log when none is found.
print_errors() {
    local errors
    errors=$(LC_ALL=C awk '
        /(^|: )error: / { if (seen[$0]++) { context = 0; next } print; context = 1; shown++; next }
        context && /^ *[0-9]* *\| / { print; next }
        { context = 0 }
    ' "$LOG")
    if [[ -n $errors ]]; then
        local total
        total=$(printf '%s\n' "$errors" | wc -l)
        printf '%s\n' "$errors" | head -n 80
        ((total > 80)) && printf '... (%d more lines of errors in the log)\n' $((total - 80))
    else
        tail -n 40 "$LOG"
    fi
}

# build LABEL SWIFT-BUILD-ARGUMENTS...: one swift build into the log, with progress. Returns its status.
build() {
    local label=$1 status
    shift
    printf '==> %s build %s\n' "$SWIFT" "$*" >>"$LOG"
    OFFSET=$(stat -c %s "$LOG" 2>/dev/null || wc -c <"$LOG")
    if [[ $VERBOSE == 1 ]]; then
        "$SWIFT" build "$@" 2>&1 | tee -a "$LOG"
        return "${PIPESTATUS[0]}"
    fi
    "$SWIFT" build "$@" >>"$LOG" 2>&1 </dev/null &
    BUILD_PID=$!
    while kill -0 "$BUILD_PID" 2>/dev/null; do
        progress "$label"
        sleep 0.5
    done
    wait "$BUILD_PID"
    status=$?
    BUILD_PID=""
    return "$status"
}

failed() {
    local what=$1 status=$2
    clear_line
    printf '==> the build failed (%s build %s: exit status %d). The errors:\n' "$SWIFT" "${what% }" "$status"
    print_errors
    printf '==> the full build log: %s\n' "$LOG"
    exit "$status"
}

if ((${#PRODUCTS[@]})); then
    printf '==> building %s (the full log goes to %s)\n' "$(printf '%s, ' "${PRODUCTS[@]}" | sed 's/, $//')" "$LOG"
    n=0
    for product in "${PRODUCTS[@]}"; do
        n=$((n + 1))
        label=$product
        ((${#PRODUCTS[@]} > 1)) && label="$product ($n of ${#PRODUCTS[@]})"
        status=0
        build "$label" --product "$product" "${ARGS[@]}" || status=$?
        ((status == 0)) || failed "--product $product ${ARGS[*]}" "$status"
        if ((!TTY)) && [[ $VERBOSE != 1 ]]; then printf '    %s  %s built\n' "$(clock)" "$product"; fi
        # The next products are of the package just built: its plan, cached by SwiftPM, is the right one (planning
        # afresh, which the Makefile asks for because its build folder is shared, takes some 8 s a build).
        for i in "${!ARGS[@]}"; do [[ ${ARGS[$i]} == --disable-build-manifest-caching ]] && unset 'ARGS[i]'; done
        ARGS=("${ARGS[@]}")
    done
else
    what="$SWIFT build"
    ((${#ARGS[@]} == 0)) || what+=" ${ARGS[*]}"
    printf '==> %s (the full log goes to %s)\n' "$what" "$LOG"
    status=0
    build "building" "${ARGS[@]}" || status=$?
    ((status == 0)) || failed "${ARGS[*]}" "$status"
fi
clear_line
printf '==> built in %s\n' "$(duration)"
