#!/usr/bin/env bash
# Checks scripts/build.sh, the quiet build of make build, make test and make demo, against a scratch package of two
# executables: `good` (it builds, with a warning) and `broken` (a type error).
#   - a build that works exits 0, says "built in", keeps the warning in the log and off the screen;
#   - a failed build exits with swift build's status (not 0), also when it is one of several --product builds, stops
#     there, and prints the compiler's error with the source lines under it and the log's path;
#   - away from a terminal, the progress comes as whole lines (BUILD_PROGRESS_INTERVAL) without the warning.
# usage: scripts/testing/build-check.sh (SWIFT from the environment); `make build-check`, part of make test.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
SWIFT=${SWIFT:-swift}
work=$(mktemp -d "${TMPDIR:-/tmp}/chirp-build-check.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT

mkdir -p "$work/pkg/Sources/good" "$work/pkg/Sources/broken"
cat >"$work/pkg/Package.swift" <<'EOF'
// swift-tools-version: 6.0
import PackageDescription

let package = Package(name: "scratch", targets: [.executableTarget(name: "good"), .executableTarget(name: "broken")])
EOF
printf 'func show() {\n    var neverMutated = 2\n    print(neverMutated)\n}\nshow()\n' >"$work/pkg/Sources/good/main.swift"
printf 'let number: Int = "not a number"\nprint(number)\n' >"$work/pkg/Sources/broken/main.swift"

failures=0
check() { # check DESCRIPTION COMMAND...: one expectation
    local description=$1
    shift
    if "$@"; then
        echo "ok: $description"
    else
        echo "FAIL: $description"
        failures=$((failures + 1))
    fi
}
has() { grep -qF -- "$2" "$1"; }
lacks() { ! grep -qF -- "$2" "$1"; }

# 1. A build that works.
status=0
BUILD_PROGRESS_INTERVAL=0 SWIFT="$SWIFT" scripts/build.sh --log "$work/good.log" --package-path "$work/pkg" \
    --product good </dev/null >"$work/good.out" 2>&1 || status=$?
check "a build that works exits 0 (got $status)" test "$status" -eq 0
check "it says it built" has "$work/good.out" "==> built in"
check "it names its log" has "$work/good.out" "the full log goes to $work/good.log"
check "the log has the compiler's warning" has "$work/good.log" "warning: variable 'neverMutated' was never mutated"
check "the screen does not" lacks "$work/good.out" "warning"
check "away from a terminal, the progress comes as whole lines" grep -qE '^    [0-9]+:[0-9]{2}  good($|: )' "$work/good.out"
check "with no terminal control characters" lacks "$work/good.out" $'\r'

# 1b. The same on a terminal (script(1) gives it one): a line redrawn in place, the warning still kept off it.
if command -v script >/dev/null 2>&1; then
    status=0
    TERM=xterm SWIFT="$SWIFT" script -qec "scripts/build.sh --log '$work/tty.log' --package-path '$work/pkg' \
        --product good" /dev/null </dev/null >"$work/tty.out" 2>&1 || status=$?
    check "on a terminal, a build that works exits 0 (got $status)" test "$status" -eq 0
    check "its progress is one line, redrawn" has "$work/tty.out" $'\r    '
    check "it says it built" has "$work/tty.out" "==> built in"
    check "the screen has no warning" lacks "$work/tty.out" "warning"
fi

# 2. A failed build, the second of three products.
status=0
SWIFT="$SWIFT" scripts/build.sh --log "$work/broken.log" --package-path "$work/pkg" \
    --product good --product broken --product good </dev/null >"$work/broken.out" 2>&1 || status=$?
check "a failed build exits with swift build's status, 1 (got $status)" test "$status" -eq 1
check "it says which build failed" has "$work/broken.out" "==> the build failed ($SWIFT build --product broken"
check "it prints the compiler's error" \
    grep -qE "broken/main.swift:1:[0-9]+: error: cannot convert value of type 'String' to specified type 'Int'" \
    "$work/broken.out"
check "with the source line under it" has "$work/broken.out" '1 | let number: Int = "not a number"'
check "and the log's path" has "$work/broken.out" "==> the full build log: $work/broken.log"
check "it stops at the failed product" lacks "$work/broken.out" "==> built in"

if ((failures)); then
    echo "build-check: $failures check(s) failed; scripts/build.sh's output:"
    sed 's/^/    good   | /' "$work/good.out"
    sed 's/^/    broken | /' "$work/broken.out"
    exit 1
fi
echo "build-check: passed"
