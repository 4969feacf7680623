// swift-tools-version: 6.1
// libFuzzer targets for Chirp's parsers of untrusted bytes and the log viewer's rendering of what they decode (see
// Docs/Reliability.md, "Fuzzing").
//
// Each target compiles the shipped sources from Sources/Chirp* and Sources/ChirpLogs through symlinks in its own
// folder, so the code fuzzed is the code shipped, not a copy. Built and run by `make fuzz` / `make fuzz-ci`
// (mk/fuzz.mk) with its own scratch path; the main package does not know about this one.
import PackageDescription

/// Coverage-guided fuzzing with address sanitizer; `-parse-as-library` because libFuzzer supplies `main`.
let fuzzerFlags: [SwiftSetting] = [.unsafeFlags(["-sanitize=fuzzer,address", "-parse-as-library"])]
let fuzzerLinkFlags: [LinkerSetting] = [.unsafeFlags(["-sanitize=fuzzer,address"])]

let package = Package(
    name: "ChirpFuzz",
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2")
    ],
    targets: [
        // Calls libFuzzer's driver from each target's entry point (SwiftPM names it <Module>_main, not main).
        .target(name: "CFuzzerDriver"),
        // The connection's frame reader (FrameReader with FrameDecoder, fed in input-chosen chunks) and the
        // frame body parsers (FrameParser).
        .executableTarget(
            name: "FuzzFrames",
            dependencies: [
                "CFuzzerDriver",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio")
            ],
            swiftSettings: fuzzerFlags,
            linkerSettings: fuzzerLinkFlags
        ),
        // The handshake parser: the first frame through FrameDecoder, then Hello.parse and Hello.refusal(of:).
        .executableTarget(
            name: "FuzzHello",
            dependencies: [
                "CFuzzerDriver", "ChirpSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio")
            ],
            swiftSettings: fuzzerFlags,
            linkerSettings: fuzzerLinkFlags
        ),
        // The one file of ChirpSupport that the handshake parser and the log formatter use (UntrustedText), under the
        // module's own name so that their `import ChirpSupport` compiles unchanged.
        .target(name: "ChirpSupport", swiftSettings: fuzzerFlags),
        // A log batch as a viewer receives it (LogProtocol.parseBatch, RecordCoding), its records re-encoded, and the
        // lines `chirp logs` prints for them (LogFormatter).
        .executableTarget(
            name: "FuzzLogs",
            dependencies: [
                "CFuzzerDriver", "ChirpSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio")
            ],
            swiftSettings: fuzzerFlags,
            linkerSettings: fuzzerLinkFlags
        ),
        // Codable messages' JSON: JSONMessageCoder's fast path (FastJSONDecoder, FastJSONEncoder) against
        // Foundation's coders.
        .executableTarget(
            name: "FuzzJSON",
            dependencies: ["CFuzzerDriver", .product(name: "NIOCore", package: "swift-nio")],
            swiftSettings: fuzzerFlags,
            linkerSettings: fuzzerLinkFlags
        ),
        // DNS-SD TXT records as browsed peers advertise them (TXTRecord.init(bytes:)).
        .executableTarget(
            name: "FuzzTXT",
            dependencies: ["CFuzzerDriver"],
            swiftSettings: fuzzerFlags,
            linkerSettings: fuzzerLinkFlags
        )
    ],
    swiftLanguageModes: [.v6]
)
