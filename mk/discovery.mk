# The discovery backends (Docs/Discovery.md). `make test` runs every test target against the default backend (Avahi's
# own client library on Linux); this step runs the live discovery and end-to-end suites again through Avahi's
# Bonjour compatibility library (`dns_sd`), the backend macOS uses and Linux users may choose.
DNSSD_SUITES := DiscoveryAndConnectionTests|MessagingTests|LoopbackTests|ConnectionSwitchTests|DaemonRecoveryTests|SecurityTests|ProcessTests

.PHONY: dnssd-test
dnssd-test: deps
	@$(BUILD) --log .build/logs/dnssd-build.log --build-tests
	CHIRP_DISCOVERY=dns-sd AVAHI_COMPAT_NOWARN=1 $(SWIFT) test --skip-build --filter 'ChirpTests\.LiveTests/($(DNSSD_SUITES))' $(TEST_FLAGS)

TEST_STEPS += dnssd-test
