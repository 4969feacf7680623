import CFuzzerDriver

/// The process entry point (SwiftPM links it as `main`): hands over to libFuzzer's driver.
@_cdecl("FuzzJSON_main")
func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    chirp_fuzzer_main(argc, argv)
}
