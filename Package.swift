// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "Chirp",
    platforms: [.macOS(.v13)],
    products: [
        .library(name: "Chirp", targets: ["Chirp"]),
        // Browsing DNS-SD without joining (ServiceBrowser, ServiceTypeBrowser): what `chirp browse` and the console use.
        .library(name: "ChirpDiscovery", targets: ["ChirpDiscovery"]),
        .library(name: "ChirpCommands", targets: ["ChirpCommands"]),
        .executable(name: "chat", targets: ["chat"]),
        .executable(name: "chirp", targets: ["chirp"]),
        .executable(name: "listr", targets: ["listr"]),
        .executable(name: "listrctl", targets: ["listrctl"]),
        .library(name: "ChirpLogs", targets: ["ChirpLogs"]),
        .library(name: "ChirpFiles", targets: ["ChirpFiles"]),
        .library(name: "ChirpLogsURLSession", targets: ["ChirpLogsURLSession"]),
        .executable(name: "logdemo", targets: ["logdemo"])
        // chirp-probe and chirp-load are executable targets, not products: they serve this repository's fault tests
        // and load runs, not users (`swift build --product NAME` builds them all the same). Chirp Console (Console/)
        // and the benchmarks (Benchmarks/ChirpBench, Benchmarks/Allocations) are packages of their own, so that a user
        // of Chirp never fetches Hummingbird, SQLite or package-benchmark.
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        // A device's self-signed X.509 certificate (DeviceIdentity), made without an OpenSSL command.
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        // Transceiver and LogSource are services of a ServiceGroup (Transceiver+Service.swift).
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        // Peers, messages, requests, discovery and log records as swift-metrics counters (Docs/Metrics.md).
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        // `make docs`: the DocC catalogs of the libraries (Sources/*/*.docc).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin.git", from: "1.5.0"),
        // The tests' child processes (ChirpTestSupport's TestProcess); swift-system for its FilePath.
        .package(url: "https://github.com/swiftlang/swift-subprocess.git", from: "1.0.2"),
        .package(url: "https://github.com/apple/swift-system.git", from: "1.8.1")
    ],
    targets: [
        // The system's DNS-SD API: Avahi's Bonjour compatibility library on Linux, dns_sd.h on macOS.
        // The two system libraries name their headers and libraries in Sources/*/module.modulemap and shim.h, not
        // through pkg-config: Avahi's .pc files add -D_REENTRANT, which SwiftPM drops with a warning on every build.
        // A missing header stops the build with the package to install (the shims' #error).
        .systemLibrary(name: "CDNSSD"),
        // Avahi's own client library (Linux): the native discovery backend, one D-Bus connection per process.
        .systemLibrary(name: "CAvahiClient"),
        // The library's layers, one target each; an arrow runs only down (Docs/Architecture.md), and the build
        // checks it (`--explicit-target-dependency-import-check error`, scripts/build.sh).
        // What every layer shares: ChirpError, Peer, UntrustedText, backoff.
        .target(
            name: "ChirpSupport",
            dependencies: [.product(name: "Logging", package: "swift-log")]
        ),
        // Frames, the handshake's hello, message coders, type names: values over ByteBuffer, no channels, no peers.
        .target(
            name: "ChirpWire",
            dependencies: [
                "ChirpSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio")
            ]
        ),
        // DNS-SD: advertise, browse, resolve, TXT records, through Avahi or dns_sd.h. Knows nothing of TCP.
        .target(
            name: "ChirpDiscovery",
            dependencies: [
                "ChirpSupport",
                "CDNSSD",
                .target(name: "CAvahiClient", condition: .when(platforms: [.linux])),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio")
            ]
        ),
        // Who is trusted, as values: device fingerprints, the trust file, the trust decision, the pairing exchange.
        // Pure (no channels, no files, no clock): the building block of per-device identities; Chirp uses its
        // Fingerprint for DeviceIdentity and the identity TLS contexts (Docs/Architecture.md).
        .target(
            name: "ChirpTrust",
            dependencies: [
                "ChirpSupport",
                .product(name: "Crypto", package: "swift-crypto")
            ]
        ),
        .testTarget(
            name: "ChirpTrustTests",
            dependencies: ["ChirpTrust"]
        ),
        // Transport, routing, security and the public face; re-exports what its users need of the layers below.
        .target(
            name: "Chirp",
            dependencies: [
                "ChirpSupport",
                "ChirpWire",
                "ChirpDiscovery",
                "ChirpTrust",  // Fingerprint: a device identity's, a TLS peer's
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),  // TLSUserEvent: the handshake showed the peer
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Metrics", package: "swift-metrics")
            ]
        ),
        .executableTarget(
            name: "chat",
            dependencies: [
                "Chirp",
                "ChirpSupport",  // UntrustedText
                "ChirpCommands",  // SecretOptions: CHIRP_SECRET / --secret-file
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log")
            ],
            path: "Examples/Chat"
        ),
        // The log-streaming channel: a swift-log backend that streams records to `chirp logs` viewers.
        .target(
            name: "ChirpLogs",
            dependencies: [
                "Chirp",
                "ChirpSupport",  // UntrustedText
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio")
            ]
        ),
        // Files larger than memory: send, receive into a directory, progress, cancel, SHA-256, resume (Docs/Files.md).
        .target(
            name: "ChirpFiles",
            dependencies: [
                "Chirp",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio")
            ]
        ),
        .testTarget(
            name: "ChirpFilesTests",
            dependencies: [
                "ChirpFiles",
                "Chirp",
                "ChirpTestSupport",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio")
            ]
        ),
        // URLSession capture for a log source (`logs.capturingHTTP(_:)`): a module of its own because on Linux it
        // brings FoundationNetworking and libcurl, whose loading would slow every process start (Docs/Performance.md).
        .target(
            name: "ChirpLogsURLSession",
            dependencies: [
                "ChirpLogs",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio")
            ]
        ),
        .executableTarget(
            name: "logdemo",
            dependencies: [
                "Chirp",
                "ChirpLogs",
                "ChirpLogsURLSession",
                "ChirpCommands",  // SecretOptions: CHIRP_SECRET / --secret-file
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio")
            ],
            path: "Examples/LogDemo"
        ),
        // The `chirp` command-line tool: browse, listen, send, ping, logs (Sources/chirp/Logs/).
        .executableTarget(
            name: "chirp",
            dependencies: [
                "Chirp",
                "ChirpLogs",
                "ChirpFiles",  // chirp send-file, receive-files
                "ChirpDiscovery",  // chirp browse
                "ChirpSupport",  // UntrustedText
                "ChirpCommands",  // SecretOptions, CommandLineTool, command replies
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio")
            ]
        ),
        // The command channel: drive a running app from a terminal.
        .target(
            name: "ChirpCommands",
            dependencies: [
                "Chirp",
                "ChirpSupport",  // UntrustedText
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log")
            ]
        ),
        // Listr: a to-do app (listr) and its command-line remote (listrctl), sharing their command types.
        .target(
            name: "ListrCommands",
            dependencies: ["ChirpCommands"],
            path: "Examples/Listr/ListrCommands"
        ),
        .executableTarget(
            name: "listr",
            dependencies: [
                "ListrCommands",
                "ChirpCommands",
                "Chirp",
                "ChirpSupport",  // UntrustedText: a pairing device's name
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log")
            ],
            path: "Examples/Listr/listr"
        ),
        .executableTarget(
            name: "listrctl",
            dependencies: [
                "ListrCommands",
                "ChirpCommands",
                "Chirp",
                "ChirpSupport",  // UntrustedText: app names from the network
                .product(name: "ArgumentParser", package: "swift-argument-parser")
            ],
            path: "Examples/Listr/listrctl"
        ),
        // A Chirp peer driven through stdin/stdout (JSON lines), for the multi-host fault tests (Docs/Reliability.md).
        .executableTarget(
            name: "chirp-probe",
            dependencies: [
                "Chirp",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio")
            ],
            path: "Examples/Probe"
        ),
        // Faults between hosts made of network namespaces (scripts/netns/netns.sh); skipped unless CHIRP_NETNS=1.
        .testTarget(
            name: "ChirpReliabilityTests",
            dependencies: [
                "Chirp",
                "ChirpTestSupport",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio")
            ]
        ),
        // Load runs behind `make load` / `make load-many` (scripts/load/run.sh): one sender broadcasting to many
        // receivers with sequence checks, and many peers in one service (Docs/Reliability.md, "Load").
        .executableTarget(
            name: "chirp-load",
            dependencies: [
                "Chirp",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log")
            ],
            path: "Examples/Load"
        ),
        .testTarget(
            name: "ChirpCommandsTests",
            dependencies: [
                "ChirpCommands",
                "ListrCommands",
                "Chirp",
                "ChirpTestSupport",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log")
            ]
        ),
        // What the test targets share: a child process with its output collected (swift-subprocess), unique service
        // types, a log capture (swift-log's InMemoryLogging), timeouts, paths.
        .target(
            name: "ChirpTestSupport",
            dependencies: [
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryLogging", package: "swift-log")
            ],
            path: "Tests/ChirpTestSupport"
        ),
        .testTarget(
            name: "ChirpLogsTests",
            dependencies: [
                "Chirp",
                "ChirpLogs",
                "ChirpLogsURLSession",
                "ChirpTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "MetricsTestKit", package: "swift-metrics")
            ]
        ),
        .testTarget(
            name: "ChirpTests",
            dependencies: [
                "Chirp",
                "ChirpSupport",
                "ChirpWire",
                "ChirpDiscovery",
                "ChirpTrust",  // Fingerprint (DeviceIdentityTests, IdentityTLSTests)
                "ChirpTestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),  // IdentityTLSTests: TLS over real sockets
                .product(name: "Crypto", package: "swift-crypto"),  // DeviceIdentityTests: other kinds of keys
                .product(name: "X509", package: "swift-certificates"),  // DeviceIdentityTests: the certificate's fields
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOTestUtils", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "MetricsTestKit", package: "swift-metrics")
            ]
        ),
        // End-to-end tests of the `chirp` binary: run it as a process against real peers and the real avahi-daemon.
        .testTarget(
            name: "ChirpCLITests",
            dependencies: [
                "chirp",  // the unit tests of its pure parts (@testable import chirp); the others run the binary
                "Chirp",
                "ChirpFiles",  // a receiver that holds its acknowledgements (the Ctrl-C test of send-file)
                "ChirpDiscovery",  // a browser finds the test peers
                "ChirpTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio")
            ],
            exclude: ["__Snapshots__"]
        )
    ],
    swiftLanguageModes: [.v6]
)
