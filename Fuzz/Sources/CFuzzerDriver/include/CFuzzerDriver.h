#ifndef CHIRP_FUZZER_DRIVER_H
#define CHIRP_FUZZER_DRIVER_H

/// Runs libFuzzer's driver (command-line flags, corpus, mutation loop) on the target's LLVMFuzzerTestOneInput.
///
/// SwiftPM links an executable target's entry point as `<Module>_main`, so libFuzzer's own `main` is never linked;
/// each target's `<Module>_main` calls this instead.
int chirp_fuzzer_main(int argc, char **argv);

#endif
