# Benchmarks (Benchmarks/ChirpBench, Docs/Performance.md): a release build, then every benchmark; one line per figure
# and bench-results/latest.json. QUICK=1 for a short smoke run; BENCH_FLAGS="--only oneway,roundtrip" for some of them.
#
# The executables are linked with --static-swift-stdlib: loading the Swift runtime and Foundation as shared libraries
# is most of a process's start-up (the startup and listrctl figures). Linking statically needs the development
# packages of libcurl and libxml2, which Benchmarks/static-deps.sh installs when they are missing.
QUICK ?=
BENCH_FLAGS ?=
BENCH_JSON ?= bench-results/latest.json
BENCH_BUILD_FLAGS ?= -c release --static-swift-stdlib

.PHONY: bench bench-deps

bench-deps:
	Benchmarks/static-deps.sh

bench: deps bench-deps
	$(SWIFT) build $(BENCH_BUILD_FLAGS) --product chirp-bench
	$(SWIFT) build $(BENCH_BUILD_FLAGS) --product listr
	$(SWIFT) build $(BENCH_BUILD_FLAGS) --product listrctl
	AVAHI_COMPAT_NOWARN=1 "$$($(SWIFT) build $(BENCH_BUILD_FLAGS) --show-bin-path)/chirp-bench" \
		$(if $(filter-out 0,$(QUICK)),--quick) --json $(BENCH_JSON) \
		--label "$$(git rev-parse --short HEAD 2>/dev/null)$$(git diff --quiet 2>/dev/null || echo +changes)" $(BENCH_FLAGS)
