# Formatting, with swift-format (it comes with the Swift toolchain: `swift format`). The configuration is
# .swift-format: 4-space indentation, 120 columns, swift-format's default rules except ReplaceForEachWithForLoop.
#
#   make format          rewrites the sources in place
#   make format-lint     reports what `make format` would change, and rule violations; fails on any (part of make test)
FORMAT_PATHS := Sources Tests Examples Console/Sources Console/Tests/ChirpConsoleTests Benchmarks/ChirpBench/Sources \
	Benchmarks/Allocations/Benchmarks Fuzz/Sources Package.swift Console/Package.swift Benchmarks/ChirpBench/Package.swift \
	Fuzz/Package.swift Benchmarks/Allocations/Package.swift

.PHONY: format format-lint

format:
	$(SWIFT) format format --in-place --recursive --parallel $(FORMAT_PATHS)

format-lint:
	@$(SWIFT) format lint --strict --recursive --parallel $(FORMAT_PATHS) && echo "swift-format: no finding"

TEST_STEPS += format-lint
