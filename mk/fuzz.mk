# Fuzzing (Fuzz/, Docs/Reliability.md "Fuzzing"): libFuzzer targets for the frame decoder, the handshake parser,
# TXT records, Codable messages' JSON, and log batches with the lines `chirp logs` prints for them, built with Swift's
# -sanitize=fuzzer,address as a package of their own (Fuzz/Package.swift) in their own build folder, so the main
# build never sees the sanitizer flags.
#
#   make fuzz                    every target for FUZZ_SECONDS seconds each (default 300); prints inputs executed
#   make fuzz FUZZ_SECONDS=3600 FUZZ_TARGETS="frames batches"
#   make fuzz-ci                 a short bounded pass (FUZZ_CI_SECONDS each, default 20); fails on any crash
#
# A crashing input lands in fuzz-corpus-tmp/artifacts/; replay it with `.build-fuzz/release/FuzzFrames FILE`.
FUZZ_SECONDS ?= 300
FUZZ_CI_SECONDS ?= 20
FUZZ_TARGETS ?= frames hello txt batches json
FUZZ_SCRATCH ?= .build-fuzz

.PHONY: fuzz-build fuzz fuzz-ci

fuzz-build:
	SWIFTC="$(dir $(shell command -v $(SWIFT)))swiftc" Fuzz/ensure-fuzzer-runtime.sh
	@cd Fuzz && SWIFT="$(SWIFT)" VERBOSE="$(VERBOSE)" ../scripts/build.sh --log $(CURDIR)/.build/logs/fuzz-build.log \
		-c release --scratch-path ../$(FUZZ_SCRATCH)

fuzz: fuzz-build
	FUZZ_BIN=$(FUZZ_SCRATCH)/release Fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-ci: fuzz-build
	FUZZ_BIN=$(FUZZ_SCRATCH)/release FUZZ_TMP=fuzz-corpus-tmp/ci Fuzz/run.sh $(FUZZ_CI_SECONDS) $(FUZZ_TARGETS)

TEST_STEPS += fuzz-ci
