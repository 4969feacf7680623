# Chirp Console (Docs/Console.md), a package of its own (Console/Package.swift). `make console-test`: one build of the
# package and its tests, in this checkout's build folder ($(SCRATCH), the Makefile says why): chirp-console, and the
# chirp and logdemo the tests run beside it, all in .build/debug;
# then its tests (scripts/run-tests.sh, as make test runs those of Chirp's package); the browser test uses the same build.
#
# Its page in a real browser: scripts/chromium-up.sh installs Debian's chromium and
# chromium-driver when they are missing (as scripts/avahi-up.sh does for Avahi); scripts/console-browser-test.sh runs
# a real logdemo and chirp-console and drives headless Chromium through chromedriver
# (Console/Tests/ConsoleBrowser/browser_check.py, Python's standard library only). Screenshots go to .build/test-logs/.
.PHONY: console-build console-test console-deps console-browser-test console-mock-check

CONSOLE_PACKAGE := Console
CONSOLE_BUILD = SWIFT="$(SWIFT)" VERBOSE="$(VERBOSE)" scripts/build.sh --log .build/logs/console-build.log \
	--package-path $(CONSOLE_PACKAGE) $(SCRATCH) $(PLAN) --build-tests

console-build:
	@$(CONSOLE_BUILD)

console-test: deps console-build
	@SWIFT="$(SWIFT)" TEST_FLAGS="$(TEST_FLAGS)" PACKAGE_PATH=$(CONSOLE_PACKAGE) SCRATCH_PATH=$(CURDIR)/.build scripts/run-tests.sh ChirpConsoleTests

TEST_STEPS += console-test

console-deps:
	scripts/chromium-up.sh

console-browser-test: deps console-deps console-build
	BIN_DIR="$$($(SWIFT) build --package-path $(CONSOLE_PACKAGE) $(SCRATCH) --show-bin-path)" scripts/console-browser-test.sh

# The page alone against a mock of the API (Console/Tests/ConsoleBrowser/mock_console.py): quick, no Swift build.
console-mock-check: console-deps
	python3 Console/Tests/ConsoleBrowser/browser_check.py --mock --screenshot-dir .build/test-logs/mock

TEST_STEPS += console-browser-test
