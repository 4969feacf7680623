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
BUILD = SWIFT="$(SWIFT)" VERBOSE="$(VERBOSE)" scripts/build.sh $(PLAN)
VERBOSE ?= 0

# The other packages of this checkout (Console/, Benchmarks/ChirpBench/, the doc snippets' scratch package) depend on it
# by path and build in its build folder, .build: SwiftPM then reuses what it compiled there (the same targets with the
# same commands: NIO, swift-crypto, Chirp...) instead of compiling it all again in a folder of each package. Switching
# from one package to another costs a re-planning and a few relinks (under a minute), not a build (5 to 10 minutes).
# Every build plans afresh (PLAN): SwiftPM's cached plan of the folder's last build does not notice that another
# package is being built (`error: No target named 'chirp-bench-...' in build description`, or worse, the other
# package's plan run again).
SCRATCH := --scratch-path $(CURDIR)/.build
PLAN := --disable-build-manifest-caching

# A target that imports a module it does not declare as a dependency fails the build: the layers' arrows point down
# only (Docs/Architecture.md), and an import up would need one.
IMPORT_CHECK := --explicit-target-dependency-import-check error

build: deps
	@$(BUILD) --log .build/logs/build.log $(IMPORT_CHECK)

# Test targets (one per directory under Tests/; Chirp Console's, in the Console package, run as a step of mk/console.mk). Each runs in a process of its own, one after the other: they talk to
# the real avahi-daemon, start processes and count this process's file descriptors, so they must not share a process.
# scripts/run-tests.sh keeps each target's output in .build/test-logs/ and repeats what failed at the end.
TEST_TARGETS := $(notdir $(wildcard Tests/*Tests))

# A failing step does not stop the others: every step runs and says how long it took, and the failed ones are named
# at the end.
test: deps
	@$(BUILD) --log .build/logs/test-build.log --build-tests $(IMPORT_CHECK)
	@failed=""; took() { s=$$(( $$(date +%s) - $$1 )); printf '%d min %02d s' $$((s / 60)) $$((s % 60)); }; \
	start=$$(date +%s); \
	SWIFT="$(SWIFT)" TEST_FLAGS="$(TEST_FLAGS)" scripts/run-tests.sh $(TEST_TARGETS) || failed=" swift-tests"; \
	echo "==> swift tests: $$(took $$start)"; \
	for step in $(TEST_STEP_ORDER); do \
		echo "==> make $$step"; begin=$$(date +%s); \
		$(MAKE) --no-print-directory $$step || failed="$$failed $$step"; \
		echo "==> make $$step: $$(took $$begin)"; \
	done; \
	if [ -n "$$failed" ]; then echo "==> make test: FAILED:$$failed"; exit 1; fi; \
	echo "==> make test: every step passed"

# Further parts of the project (fuzzing, the multi-host harness, load runs) each keep their targets in a file of
# their own under mk/. A part that belongs in `make test` adds its target to TEST_STEPS there; they run after the
# swift tests, in the order of TEST_STEP_ORDER (below), then any other in file-name order.
TEST_STEPS :=
include $(sort $(wildcard mk/*.mk))

# scripts/build.sh itself, against a scratch package: the status, errors and log path of a failed build, the warnings
# kept in the log (scripts/testing/build-check.sh).
.PHONY: build-check
build-check:
	@SWIFT="$(SWIFT)" scripts/testing/build-check.sh

TEST_STEPS += build-check

# The steps that build this package come first, then those that build the packages beside it in the same build
# folder ($(SCRATCH)): the console, chirp-bench, the doc snippets, then the docs (the console's first). SwiftPM keeps in
# .build/checkouts only the dependencies of the package being built: going from the console's to this package's, it
# removes Hummingbird and the others; going back, it checks them out again, newer files that it compiles again
# (3 minutes). In this order, it goes back and forth no more than it must.
TEST_STEP_ORDER_FIRST := format-lint dnssd-test load-ci netns-test alloc-check fuzz-ci build-check \
	console-test console-browser-test bench-build-check doc-snippets docs
TEST_STEP_ORDER = $(filter $(TEST_STEPS),$(TEST_STEP_ORDER_FIRST)) $(filter-out $(TEST_STEP_ORDER_FIRST),$(TEST_STEPS))

# The same tests under the thread sanitizer (a separate build folder).
tsan: deps
	$(SWIFT) build --build-tests --sanitize=thread --scratch-path .build-tsan $(PLAN)
	@set -e; for target in $(TEST_TARGETS); do \
		echo "==> swift test (thread sanitizer): $$target"; \
		TSAN_OPTIONS="suppressions=$(CURDIR)/scripts/testing/tsan.supp $$TSAN_OPTIONS" AVAHI_COMPAT_NOWARN=1 \
			$(SWIFT) test --skip-build --sanitize=thread --scratch-path .build-tsan --filter "^$$target\." $(TEST_FLAGS); \
	done
	$(SWIFT) build --build-tests --sanitize=thread --package-path Console --scratch-path $(CURDIR)/.build-tsan $(PLAN)
	@echo "==> swift test (thread sanitizer): ChirpConsoleTests"
	@TSAN_OPTIONS="suppressions=$(CURDIR)/scripts/testing/tsan.supp $$TSAN_OPTIONS" AVAHI_COMPAT_NOWARN=1 \
		$(SWIFT) test --skip-build --sanitize=thread --package-path Console --scratch-path $(CURDIR)/.build-tsan $(TEST_FLAGS)

# The demo (scripts/demo.sh) builds only the executables it runs: those of this package and chirp-console, all through
# the Console package (its graph has this package's executables too), in .build/debug ($(SCRATCH)). One package: a
# second `make demo` builds nothing (the TEST_STEP_ORDER comment says what going from one package to another costs).
# KEEP=1 leaves them running at the end, until Ctrl-C.
# The script replaces the recipe's shell (exec): a Ctrl-C that ends KEEP=1 as intended then gets no "make: ***
# Interrupt" (sh, interrupted while it waits, would die of the signal after the script exited 0).
DEMO_PRODUCTS := chat chirp listr listrctl logdemo chirp-console
KEEP ?= 0

demo: deps
	@$(BUILD) --log .build/logs/demo-build.log --package-path Console $(SCRATCH) $(addprefix --product ,$(DEMO_PRODUCTS))
	@exec env KEEP="$(KEEP)" scripts/demo.sh

clean:
	$(SWIFT) package clean
	$(SWIFT) package --package-path Console clean
	$(SWIFT) package --package-path Benchmarks/ChirpBench clean
	rm -rf .build-tsan .build-fuzz
