# Documentation checks. `make doc-snippets` compiles every ```swift block of README.md and Docs/*.md against this
# checkout (scripts/doc-snippets.py: a scratch package in .build/doc-snippets, one executable per block; a warning in a
# block's own code fails it). Part of make test, so a snippet can no longer drift from the API.
.PHONY: doc-snippets

doc-snippets:
	SWIFT="$(SWIFT)" python3 -u scripts/doc-snippets.py

TEST_STEPS += doc-snippets
