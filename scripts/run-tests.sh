#!/usr/bin/env bash
# Runs each test target in a process of its own, one after the other (see the Makefile's `test` target), keeps each
# target's output in .build/test-logs/TARGET.log, and when a target fails, repeats the lines that say what failed at
# the very end of the output, where a CI summary that shows only the last lines still has them.
#
# usage: scripts/run-tests.sh TARGET... (SWIFT, TEST_FLAGS and SWIFT_TEST_ARGS from the environment)
set -uo pipefail
SWIFT=${SWIFT:-swift}
logs=.build/test-logs
mkdir -p "$logs"
failed=()
for target in "$@"; do
    echo "==> swift test: $target"
    # shellcheck disable=SC2086
    AVAHI_COMPAT_NOWARN=1 "$SWIFT" test --skip-build --filter "^$target\." ${SWIFT_TEST_ARGS:-} ${TEST_FLAGS:-} 2>&1 \
        | tee "$logs/$target.log"
    status=${PIPESTATUS[0]}
    if [ "$status" -ne 0 ]; then
        failed+=("$target")
        # Stop at the first failing target, as `set -e` did; the summary below says what failed.
        break
    fi
done
if [ "${#failed[@]}" -eq 0 ]; then exit 0; fi
echo
echo "==> FAILED: ${failed[*]} (full output in $logs/)"
for target in "${failed[@]}"; do
    # Swift Testing: "✘ Test x() recorded an issue at File.swift:12:5: Expectation failed: ..." and the lines that
    # continue it (indented with ↳); XCTest: "error: ... failed"; a crash: "Fatal error", signal lines.
    grep -E -A6 "recorded an issue|✘ Test .* failed|error: -\[|: error: |Fatal error|signal [0-9]+|Unexpectedly found nil|Exited with" \
        "$logs/$target.log" | grep -v -E "^✔" | head -80
done
exit 1
