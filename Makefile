# Chirp — build, test and demo entry points.
# Every target that runs code first makes sure DNS-SD works here (scripts/avahi-up.sh:
# installs Avahi if needed, starts dbus + avahi-daemon confined to loopback).

SWIFT ?= swift
TEST_FLAGS ?=

.DEFAULT_GOAL := build
.PHONY: deps build test tsan demo clean

deps:
	scripts/avahi-up.sh

build: deps
	$(SWIFT) build

# Tests talk to the real avahi-daemon: keep swift test's default (serial) execution.
test: deps
	$(SWIFT) build --build-tests
	AVAHI_COMPAT_NOWARN=1 $(SWIFT) test $(TEST_FLAGS)
# Further test steps (e.g. the network-namespace multi-host harness) go here, below
# the swift test line, one recipe line each, in the order they should run.

tsan: deps
	AVAHI_COMPAT_NOWARN=1 $(SWIFT) test --sanitize=thread --scratch-path .build-tsan $(TEST_FLAGS)

demo: deps
	$(SWIFT) build
	SWIFT="$(SWIFT)" scripts/demo.sh

clean:
	$(SWIFT) package clean
	rm -rf .build-tsan
