// swift-tools-version: 6.1
// The benchmarks behind `make bench` (Docs/Performance.md): one release executable, chirp-bench, that spawns itself as
// peers. A package of its own, so that Chirp's users never fetch what it measures against (Chirp Console and its
// dependencies); it depends on this checkout and on Console/ by path. `make bench` builds and runs it.
import PackageDescription

let package = Package(
    name: "ChirpBench",
    platforms: [.macOS(.v13)],
    dependencies: [
        // The checkout and its Console package. `name:` so that the products below find them whatever the
        // checkout's folder is called (a path dependency is otherwise named after its folder).
        .package(name: "chirp", path: "../.."),
        .package(name: "chirp-console", path: "../../Console"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0")
    ],
    targets: [
        .executableTarget(
            name: "chirp-bench",
            dependencies: [
                .product(name: "Chirp", package: "chirp"),
                .product(name: "ChirpLogs", package: "chirp"),
                .product(name: "ChirpFiles", package: "chirp"),
                .product(name: "ChirpConsole", package: "chirp-console"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                // The bare NIO ping-pong of the round-trip figures (NIOSession).
                .product(name: "NIOPosix", package: "swift-nio"),
                // The bare TLS handshakes under the connection set-up figures (TLSFloor).
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                // The listrctl benchmark runs them, next to chirp-bench in the same build folder.
                .product(name: "listr", package: "chirp"),
                .product(name: "listrctl", package: "chirp")
            ]
        )
    ],
    swiftLanguageModes: [.v6]
)
