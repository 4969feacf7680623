# Chirp — build, test and demo entry points.
# Every target that runs code first makes sure DNS-SD works here (scripts/avahi-up.sh:
# installs Avahi if needed, starts dbus + avahi-daemon confined to loopback).

SWIFT ?= swift
TEST_FLAGS ?=

.DEFAULT_GOAL := build
.PHONY: deps build test tsan demo bench clean

deps:
	scripts/avahi-up.sh

# The builds print one line of progress, the compiler's output going to a log file under .build/logs/; a failed build
# prints its errors and the log's path (scripts/build.sh). VERBOSE=1 prints the whole output as well.
BUILD = SWIFT="$(SWIFT)" VERBOSE="$(VERBOSE)" scripts/build.sh
VERBOSE ?= 0

# A target that imports a module it does not declare as a dependency fails the build: the layers' arrows point down
# only (Docs/Architecture.md), and an import up would need one.
IMPORT_CHECK := --explicit-target-dependency-import-check error

build: deps
	@$(BUILD) --log .build/logs/build.log $(IMPORT_CHECK)

# Test targets (one per directory under Tests/; Chirp Console's, in the Console package, run as a step of mk/console.mk). Each runs in a process of its own, one after the other: they talk to
# the real avahi-daemon, start processes and count this process's file descriptors, so they must not share a process.
# scripts/run-tests.sh keeps each target's output in .build/test-logs/ and repeats what failed at the end.
TEST_TARGETS := $(notdir $(wildcard Tests/*Tests))

# A failing step does not stop the others: every step runs, and the failed ones are named at the end.
test: deps
	@$(BUILD) --log .build/logs/test-build.log --build-tests $(IMPORT_CHECK)
	@failed=""; \
	SWIFT="$(SWIFT)" TEST_FLAGS="$(TEST_FLAGS)" scripts/run-tests.sh $(TEST_TARGETS) || failed=" swift-tests"; \
	for step in $(TEST_STEPS); do \
		echo "==> make $$step"; $(MAKE) --no-print-directory $$step || failed="$$failed $$step"; \
	done; \
	if [ -n "$$failed" ]; then echo "==> make test: FAILED:$$failed"; exit 1; fi; \
	echo "==> make test: every step passed"

# Further parts of the project (fuzzing, the multi-host harness, load runs) each keep their targets in a file of
# their own under mk/. A part that belongs in `make test` adds its target to TEST_STEPS there; they run after the
# swift tests, in file-name order.
TEST_STEPS :=
include $(sort $(wildcard mk/*.mk))

# scripts/build.sh itself, against a scratch package: the status, errors and log path of a failed build, the warnings
# kept in the log (scripts/testing/build-check.sh).
.PHONY: build-check
build-check:
	@SWIFT="$(SWIFT)" scripts/testing/build-check.sh

TEST_STEPS += build-check

# The same tests under the thread sanitizer (a separate build folder).
tsan: deps
	$(SWIFT) build --build-tests --sanitize=thread --scratch-path .build-tsan
	@set -e; for target in $(TEST_TARGETS); do \
		echo "==> swift test (thread sanitizer): $$target"; \
		TSAN_OPTIONS="suppressions=$(CURDIR)/scripts/testing/tsan.supp $$TSAN_OPTIONS" AVAHI_COMPAT_NOWARN=1 \
			$(SWIFT) test --skip-build --sanitize=thread --scratch-path .build-tsan --filter "^$$target\." $(TEST_FLAGS); \
	done
	$(SWIFT) build --build-tests --sanitize=thread --package-path Console --scratch-path Console/.build-tsan
	@echo "==> swift test (thread sanitizer): ChirpConsoleTests"
	@TSAN_OPTIONS="suppressions=$(CURDIR)/scripts/testing/tsan.supp $$TSAN_OPTIONS" AVAHI_COMPAT_NOWARN=1 \
		$(SWIFT) test --skip-build --sanitize=thread --package-path Console --scratch-path Console/.build-tsan $(TEST_FLAGS)

# The demo (scripts/demo.sh) builds only the executables it runs: those of this package, then chirp-console in the
# Console package (Console/.build/debug). KEEP=1 leaves them running at the end, until Ctrl-C.
# The script replaces the recipe's shell (exec): a Ctrl-C that ends KEEP=1 as intended then gets no "make: ***
# Interrupt" (sh, interrupted while it waits, would die of the signal after the script exited 0).
DEMO_PRODUCTS := chat chirp listr listrctl logdemo
KEEP ?= 0

demo: deps
	@$(BUILD) --log .build/logs/demo-build.log $(addprefix --product ,$(DEMO_PRODUCTS))
	@$(BUILD) --log .build/logs/demo-console-build.log --package-path Console --product chirp-console
	@exec env KEEP="$(KEEP)" scripts/demo.sh

clean:
	$(SWIFT) package clean
	$(SWIFT) package --package-path Console clean
	$(SWIFT) package --package-path Benchmarks/ChirpBench clean
	rm -rf .build-tsan .build-fuzz Console/.build-tsan
