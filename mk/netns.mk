# The multi-host fault tests (Docs/Reliability.md, "Faults"): hosts made of network namespaces on this machine
# (scripts/netns/netns.sh), a chirp-probe on each, faults injected between them. Needs root; nothing leaves the machine.
# Skipped, with one line, where the harness cannot run (scripts/netns/netns.sh available says why). Every test runs
# with the default discovery backend (avahi); those whose subject is discovery itself (a daemon restarting, services
# crossing hosts and subnets, IPv6 addresses, a peer leaving, an address or an interface changing) run again with the
# dns_sd.h backend (Docs/Discovery.md). The others (loss, slow links, frozen and bad peers, a cut link, the log
# channel's spool) are about the connections, which are the same with either backend, and run once.
# Every harness a test builds is removed when the test ends; whatever an interrupted run leaves is removed on exit,
# from the prefixes the tests write to $CHIRP_NETNS_PREFIX_LOG.

NETNS_SH := scripts/netns/netns.sh
NETNS_DISCOVERY_SUITES := AvahiRestartTests|HarnessTests|IPv6Tests|KilledPeerTests|NetworkChangeTests|SubnetTests

.PHONY: netns-test
netns-test: deps
	@if ! reason=$$($(NETNS_SH) available); then echo "==> netns-test skipped: $$reason"; exit 0; fi; \
	set -e; \
	$(BUILD) --log .build/logs/netns-probe-build.log --product chirp-probe; \
	$(BUILD) --log .build/logs/netns-build.log --build-tests; \
	prefixes=$$(mktemp); \
	trap 'while read -r p; do NETNS_PREFIX=$$p NETNS_QUIET=1 $(NETNS_SH) down || true; done <"$$prefixes"; rm -f "$$prefixes"' EXIT; \
	trap 'exit 130' INT TERM; \
	for backend in avahi dns-sd; do \
		filter='^ChirpReliabilityTests\.'; \
		if [ $$backend = dns-sd ]; then filter="$$filter.*($(NETNS_DISCOVERY_SUITES))"; fi; \
		echo "==> netns-test: discovery backend $$backend"; \
		CHIRP_DISCOVERY=$$backend CHIRP_NETNS=1 CHIRP_NETNS_PREFIX_LOG="$$prefixes" AVAHI_COMPAT_NOWARN=1 \
			$(SWIFT) test --skip-build --filter "$$filter" $(TEST_FLAGS); \
	done

# The long versions (Docs/Reliability.md, "Networks that change"): a host asleep for 60 s, a minute of 20% loss and
# five minutes of 5% loss, each with traffic; with the default discovery backend. About 8 minutes. Not in `make test`.
.PHONY: netns-long
netns-long: deps
	@if ! reason=$$($(NETNS_SH) available impair); then echo "==> netns-long skipped: $$reason"; exit 0; fi; \
	set -e; \
	$(BUILD) --log .build/logs/netns-probe-build.log --product chirp-probe; \
	$(BUILD) --log .build/logs/netns-build.log --build-tests; \
	prefixes=$$(mktemp); \
	trap 'while read -r p; do NETNS_PREFIX=$$p NETNS_QUIET=1 $(NETNS_SH) down || true; done <"$$prefixes"; rm -f "$$prefixes"' EXIT; \
	trap 'exit 130' INT TERM; \
	CHIRP_NETNS=1 CHIRP_NETNS_LONG=1 CHIRP_NETNS_PREFIX_LOG="$$prefixes" AVAHI_COMPAT_NOWARN=1 \
		$(SWIFT) test --skip-build --filter '^ChirpReliabilityTests\..*(LossRecoveryTests|aHostAsleep)' $(TEST_FLAGS)

TEST_STEPS += netns-test
