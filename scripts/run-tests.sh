#!/usr/bin/env bash
# Runs each test target in a process of its own, one after the other (see the Makefile's `test` target), keeps each
# target's output in .build/test-logs/TARGET.log, and when a target fails, repeats the lines that say what failed at
# the very end of the output, where a CI summary that shows only the last lines still has them.
#
# usage: scripts/run-tests.sh TARGET... (SWIFT and TEST_FLAGS from the environment; PACKAGE_PATH for the targets of
# another package of this repository, such as Console, and SCRATCH_PATH for the build folder it was built in)
set -uo pipefail
SWIFT=${SWIFT:-swift}
logs=.build/test-logs
mkdir -p "$logs"
failed=""
for target in "$@"; do
    echo "==> swift test: $target"
    # shellcheck disable=SC2086
    AVAHI_COMPAT_NOWARN=1 "$SWIFT" test ${PACKAGE_PATH:+--package-path "$PACKAGE_PATH"} ${SCRATCH_PATH:+--scratch-path "$SCRATCH_PATH"} --skip-build --filter "^$target\." ${TEST_FLAGS:-} 2>&1 | tee "$logs/$target.log"
    # Stop at the first failing target, as `set -e` did; the summary below says what failed.
    if [ "${PIPESTATUS[0]}" -ne 0 ]; then failed=$target; break; fi
done
[ -z "$failed" ] && exit 0
echo
echo "==> FAILED: $failed (full output in $logs/$failed.log)"
# Swift Testing: "✘ Test x() recorded an issue at File.swift:12:5: Expectation failed: ..." and the lines that continue
# it; XCTest: "error: ... failed"; a crash: "Fatal error", signal lines.
grep -E -A6 "recorded an issue|✘ Test .* failed|error: -\[|: error: |Fatal error|signal [0-9]+|Unexpectedly found nil|Exited with" \
    "$logs/$failed.log" | grep -v -E "^✔" | head -80
exit 1
