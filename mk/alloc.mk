# Allocations per small message on the send and the receive side (issue 16: at most 2 each), and per ping and request
# round trip on the requester's and the answering side, counted by package-benchmark's malloc interposer in a package
# of its own (Benchmarks/Allocations), release build.
#
#   make alloc            print the figures
#   make alloc-check      compare with Benchmarks/Allocations/Thresholds (in `make test`): fails at one allocation
#                         more per message than today
#   make alloc-update     write the current figures as the thresholds (tighter than the goal; commit them)
#
# Allocation counts are stable on a loaded machine, where times are not: this is the gate; `make bench` has the times.
ALLOC_DIR := Benchmarks/Allocations
ALLOC_SWIFT = cd $(ALLOC_DIR) && $(SWIFT) package --allow-writing-to-package-directory benchmark --no-progress

.PHONY: alloc-link alloc alloc-check alloc-update

# The package depends on this checkout as `chirp`: a path dependency is named after its folder.
alloc-link:
	@ln -sfn ../.. $(ALLOC_DIR)/chirp

alloc: deps alloc-link
	$(ALLOC_SWIFT)

alloc-check: deps alloc-link
	SWIFT="$(SWIFT)" scripts/alloc-check.sh

alloc-update: deps alloc-link
	$(ALLOC_SWIFT) thresholds update

TEST_STEPS += alloc-check
