# Chirp Console (Docs/Console.md): its page in a real browser. scripts/chromium-up.sh installs Debian's chromium and
# chromium-driver when they are missing (as scripts/avahi-up.sh does for Avahi); scripts/console-browser-test.sh runs
# a real logdemo and chirp-console and drives headless Chromium through chromedriver
# (Tests/ConsoleBrowser/browser_check.py, Python's standard library only). Screenshots go to .build/test-logs/.
.PHONY: console-deps console-browser-test console-mock-check

console-deps:
	scripts/chromium-up.sh

console-browser-test: deps console-deps
	$(SWIFT) build --product chirp-console
	$(SWIFT) build --product logdemo
	scripts/console-browser-test.sh

# The page alone against a mock of the API (Tests/ConsoleBrowser/mock_console.py): quick, no Swift build.
console-mock-check: console-deps
	python3 Tests/ConsoleBrowser/browser_check.py --mock --screenshot-dir .build/test-logs/mock

TEST_STEPS += console-browser-test
