# File transfers (Docs/Files.md): the long version of the memory test, a 1 GiB file (sparse: zeros from the page
# cache) from one transceiver to another over loopback, printing its throughput and resident memory growth.
# `FILES_MIB=4096 make files-long` for another size. The CI-sized one (256 MiB) is part of make test.

FILES_MIB ?= 1024

.PHONY: files-long
files-long: deps
	@$(BUILD) --log .build/logs/files-build.log --build-tests $(IMPORT_CHECK)
	CHIRP_FILES_MIB=$(FILES_MIB) AVAHI_COMPAT_NOWARN=1 $(SWIFT) test --skip-build \
		--filter 'ChirpFilesTests.FileTransferTests/memoryIsBounded' $(TEST_FLAGS) 2>&1 | grep -E '^files:|passed|failed|issue'
