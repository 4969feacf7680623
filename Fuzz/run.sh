#!/usr/bin/env bash
# Runs the libFuzzer targets built in .build-fuzz/release for SECONDS each, one after the other, at low priority.
#
#   Fuzz/run.sh SECONDS [TARGET...]      TARGET: frames, hello, txt, batches, json (default: all five)
#
# Seeds come from Fuzz/corpus/<target>/ (read only). What libFuzzer finds goes to fuzz-corpus-tmp/<target>/ (git
# ignores it; it is kept between runs so later runs start from it), crashing inputs to fuzz-corpus-tmp/artifacts/,
# the full log to fuzz-corpus-tmp/logs/<target>.log. Prints one line per target with the number of inputs executed
# and exits non-zero when any target found a crash, a leak, a timeout or a broken invariant.
set -uo pipefail

cd "$(dirname "$0")/.."
SECONDS_EACH="${1:?usage: Fuzz/run.sh SECONDS [frames|hello|txt|batches|json ...]}"
shift
TARGETS=("$@")
[[ ${#TARGETS[@]} -gt 0 ]] || TARGETS=(frames hello txt batches json)
BIN="${FUZZ_BIN:-.build-fuzz/release}"
TMP="${FUZZ_TMP:-fuzz-corpus-tmp}"
NICE="${FUZZ_NICE:-nice -n 10}"
# No allocation stacks (the crash's own stack is still printed): recording one per malloc costs ~15% of the speed.
export ASAN_OPTIONS="${ASAN_OPTIONS:-malloc_context_size=0}"
mkdir -p "$TMP/artifacts" "$TMP/logs"

failed=0
for target in "${TARGETS[@]}"; do
    case "$target" in
        # 1100 bytes: room for a 1024-byte frame (the 1024 limit exactly) with its header and the chunk sizes.
        frames) executable=FuzzFrames; options=(-max_len=1100) ;;
        hello) executable=FuzzHello; options=(-max_len=16400 -dict=Fuzz/hello.dict) ;;
        txt) executable=FuzzTXT; options=(-max_len=1024) ;;
        # 20000 bytes: room for a metadata value or URL past the writer's 16 KiB limit, so the cut is exercised.
        batches) executable=FuzzLogs; options=(-max_len=20000) ;;
        json) executable=FuzzJSON; options=(-max_len=4096 -dict=Fuzz/json.dict) ;;
        *) echo "==> unknown fuzz target '$target' (frames, hello, txt, batches, json)" >&2; exit 2 ;;
    esac
    mkdir -p "$TMP/$target"
    log="$TMP/logs/$target.log"
    echo "==> fuzz $target ($executable) for $SECONDS_EACH s"
    $NICE "$BIN/$executable" "${options[@]}" -max_total_time="$SECONDS_EACH" -timeout=10 -print_final_stats=1 \
        -artifact_prefix="$TMP/artifacts/$target-" "$TMP/$target" "Fuzz/corpus/$target" >"$log" 2>&1
    status=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    if [[ -z "$runs" ]]; then  # a crash ends the run before the final stats; the last status line has the count
        runs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#')
    fi
    rate=$(grep -oE 'exec/s: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+')
    if [[ $status -eq 0 ]]; then
        echo "fuzz $target: ${runs:-0} inputs in $SECONDS_EACH s (${rate:-?} exec/s at the end), no crash"
    elif [[ $status -eq 72 ]]; then  # libFuzzer's exit code when interrupted (Ctrl-C)
        failed=1
        echo "fuzz $target: interrupted after ${runs:-?} inputs, no crash"
    else
        failed=1
        echo "fuzz $target: FAILED after ${runs:-?} inputs (exit $status); log: $log"
        grep -E 'invariant violated|ERROR:|SUMMARY:|Test unit written to' "$log" | head -5
    fi
done
exit $failed
