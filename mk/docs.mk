# Documentation checks. `make doc-snippets` compiles every ```swift block of README.md and Docs/*.md against this
# checkout (scripts/doc-snippets.py: a scratch package in .build/doc-snippets, one executable per block; a warning in a
# block's own code fails it). Part of make test, so a snippet can no longer drift from the API.
.PHONY: doc-snippets

doc-snippets:
	SWIFT="$(SWIFT)" python3 -u scripts/doc-snippets.py

TEST_STEPS += doc-snippets

# The DocC catalogs of the libraries (Sources/*/*.docc, and ChirpConsole's in the Console package: PACKAGE:TARGET),
# through swift-docc-plugin; a warning (a link that does not resolve, a parameter without documentation) fails it. Part
# of make test. The archives land in .build/plugins/Swift-DocC/outputs/ (Console/.build/... for ChirpConsole);
# `make docs-preview TARGET=Chirp` serves one locally (`PACKAGE=Console TARGET=ChirpConsole` for the console's).
DOC_TARGETS := Chirp ChirpCommands ChirpLogs ChirpLogsURLSession Console:ChirpConsole
.PHONY: docs docs-preview

docs:
	@mkdir -p .build/docs-logs; for entry in $(DOC_TARGETS); do \
		case $$entry in *:*) package=$${entry%%:*}; target=$${entry#*:} ;; *) package=.; target=$$entry ;; esac; \
		echo "==> docc: $$target"; \
		if ! $(SWIFT) package --package-path $$package --disable-sandbox generate-documentation --target $$target \
			--warnings-as-errors >.build/docs-logs/$$target.log 2>&1; then \
			grep -v -e '^\[' -e 'prohibited flag' .build/docs-logs/$$target.log | tail -40; exit 1; \
		fi; \
		grep -e 'Generated documentation archive' -A1 .build/docs-logs/$$target.log | tail -1; \
	done

PACKAGE ?= .
docs-preview:
	$(SWIFT) package --package-path $(PACKAGE) --disable-sandbox preview-documentation --target $(TARGET)

TEST_STEPS += docs
