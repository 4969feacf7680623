#include "CFuzzerDriver.h"

#include <stddef.h>
#include <stdint.h>

// Both from libFuzzer: the driver in the runtime -sanitize=fuzzer links, the callback in the Swift target (@_cdecl).
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int chirp_fuzzer_main(int argc, char **argv) {
    return LLVMFuzzerRunDriver(&argc, &argv, LLVMFuzzerTestOneInput);
}
