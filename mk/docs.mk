# Documentation checks. `make doc-snippets` compiles every ```swift block of README.md, Docs/*.md and the DocC articles against this
# checkout (scripts/doc-snippets.py: a scratch package in .build/doc-snippets, one executable per block; a warning in a
# block's own code fails it). Part of make test, so a snippet can no longer drift from the API.
.PHONY: doc-snippets

doc-snippets:
	SWIFT="$(SWIFT)" python3 -u scripts/doc-snippets.py

TEST_STEPS += doc-snippets

# The DocC catalogs of the libraries (Sources/*/*.docc, and ChirpConsole's in the Console package: PACKAGE:TARGET),
# through swift-docc-plugin; a warning (a link that does not resolve, a parameter without documentation) fails it. Part
# of make test. An entry of targets joined by `+` is one combined build (the plugin's
# --enable-experimental-combined-documentation): Chirp and the layers below it, whose docs link down to one another
# with absolute links (``/ChirpSupport/ChirpError``; a target links only to the ones it depends on). Without the
# extended types: Chirp's conformance of Peer to Recipients would make a page `ChirpSupport` inside Chirp's docs, and
# ``/ChirpSupport/...`` would look there instead of in ChirpSupport's. Every package builds in this checkout's build
# folder ($(SCRATCH)), where `make test` built them already; the archives land in .build/plugins/Swift-DocC/outputs/
# (the combined one as Chirp.doccarchive);
# `make docs-preview TARGET=Chirp` serves one locally (`PACKAGE=Console TARGET=ChirpConsole` for the console's).
# The console's first: `make test` runs this step right after the console's (the Makefile's TEST_STEP_ORDER says why).
DOC_TARGETS := Console:ChirpConsole Chirp+ChirpSupport+ChirpWire+ChirpDiscovery ChirpCommands ChirpLogs \
	ChirpLogsURLSession ChirpFiles
.PHONY: docs docs-preview

docs:
	@mkdir -p .build/docs-logs; failed=""; for entry in $(DOC_TARGETS); do \
		case $$entry in *:*) package=$${entry%%:*}; targets=$${entry#*:} ;; *) package=.; targets=$$entry ;; esac; \
		name=$${targets%%+*}; flags=""; \
		case $$targets in *+*) flags="--enable-experimental-combined-documentation --exclude-extended-types" ;; esac; \
		for target in $$(echo $$targets | tr '+' ' '); do flags="$$flags --target $$target"; done; \
		echo "==> docc: $$targets"; \
		if ! $(SWIFT) package --package-path $$package $(SCRATCH) $(PLAN) --disable-sandbox generate-documentation $$flags \
			--warnings-as-errors >.build/docs-logs/$$name.log 2>&1; then \
			grep -v -e '^\[' -e 'prohibited flag' .build/docs-logs/$$name.log | tail -40; failed="$$failed $$targets"; \
			continue; \
		fi; \
		grep -e 'Generated .*documentation archive' -A1 .build/docs-logs/$$name.log | tail -1; \
	done; \
	if [ -n "$$failed" ]; then echo "docs failed:$$failed (logs in .build/docs-logs)"; exit 1; fi

PACKAGE ?= .
docs-preview:
	$(SWIFT) package --package-path $(PACKAGE) $(SCRATCH) $(PLAN) --disable-sandbox preview-documentation --target $(TARGET)

TEST_STEPS += docs
