# Benchmarks (Benchmarks/ChirpBench, Docs/Performance.md): a release build, then every benchmark; one line per figure
# and bench-results/latest.json. QUICK=1 for a short smoke run; BENCH_FLAGS="--only oneway,roundtrip" for some of them.
# chirp-bench is a package of its own (Benchmarks/ChirpBench/Package.swift, on this checkout and Console/ by path): one
# build makes it and the listr and listrctl it runs, in Benchmarks/ChirpBench/.build; it runs from here.
#
# The executables are linked with --static-swift-stdlib: loading the Swift runtime and Foundation as shared libraries
# is most of a process's start-up (the startup and listrctl figures). Linking statically needs the development
# packages of libcurl and libxml2, which Benchmarks/static-deps.sh installs when they are missing.
QUICK ?=
BENCH_FLAGS ?=
BENCH_JSON ?= bench-results/latest.json
BENCH_BUILD_FLAGS ?= -c release --static-swift-stdlib

.PHONY: bench bench-deps

# The pyzmq anchors (Benchmarks/pyzmq-anchor.py) run from a virtual environment of their own, with pyzmq from PyPI.
BENCH_VENV ?= .build/bench-venv

bench-deps:
	Benchmarks/static-deps.sh
	@test -x $(BENCH_VENV)/bin/python3 -a -f $(BENCH_VENV)/.pyzmq || { \
		echo "==> installing pyzmq into $(BENCH_VENV) (the anchors of make bench)"; \
		python3 -m venv $(BENCH_VENV) && $(BENCH_VENV)/bin/pip install --quiet 'pyzmq>=26' && touch $(BENCH_VENV)/.pyzmq; }

BENCH_PACKAGE := Benchmarks/ChirpBench

bench: deps bench-deps
	$(SWIFT) build $(BENCH_BUILD_FLAGS) --package-path $(BENCH_PACKAGE)
	AVAHI_COMPAT_NOWARN=1 CHIRP_BENCH_PYTHON=$(BENCH_VENV)/bin/python3 CHIRP_BENCH_PYZMQ_SCRIPT=Benchmarks/pyzmq-anchor.py \
		"$$($(SWIFT) build $(BENCH_BUILD_FLAGS) --package-path $(BENCH_PACKAGE) --show-bin-path)/chirp-bench" \
		$(if $(filter-out 0,$(QUICK)),--quick) --json $(BENCH_JSON) \
		--label "$$(git rev-parse --short HEAD 2>/dev/null)$$(git diff --quiet 2>/dev/null || echo +changes)" $(BENCH_FLAGS)

# chirp-bench compiles (a debug build, nothing run): a step of `make test`, so that a change to what the benchmarks use
# of the library fails there and not at the next `make bench`. In this checkout's build folder ($(SCRATCH)), where
# `make test` has built the library and the console already.
.PHONY: bench-build-check
bench-build-check: deps
	@$(BUILD) --log .build/logs/bench-build.log --package-path $(BENCH_PACKAGE) $(SCRATCH) --product chirp-bench

TEST_STEPS += bench-build-check
