// swift-tools-version: 6.1
// Chirp Console (Docs/Console.md): collects the logs and HTTP calls of every log source into a SQLite store and serves
// them to a browser. A package of its own beside Chirp's, so that a user of Chirp, ChirpCommands or ChirpLogs never
// fetches its web server and its store (Hummingbird, SQLiteNIO and theirs). It depends on this checkout by path.
//
//   swift build --package-path Console                 chirp-console in Console/.build/debug
//   swift test --package-path Console                  its tests (make test runs them: mk/console.mk)
import PackageDescription

let package = Package(
    name: "ChirpConsole",
    platforms: [.macOS(.v13)],
    products: [
        .library(name: "ChirpConsole", targets: ["ChirpConsole"]),
        .executable(name: "chirp-console", targets: ["chirp-console"])
    ],
    dependencies: [
        // The checkout this folder is in. `name:` so that the products below find it whatever the checkout's folder
        // is called (a path dependency is otherwise named after its folder).
        .package(name: "chirp", path: ".."),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        // The console's web server and its store.
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/vapor/sqlite-nio.git", from: "1.13.2"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        // The tests' child processes (ChirpTestSupport's TestProcess); swift-system for its FilePath.
        .package(url: "https://github.com/swiftlang/swift-subprocess.git", from: "1.0.2"),
        .package(url: "https://github.com/apple/swift-system.git", from: "1.8.1"),
        // `make docs`: ChirpConsole's DocC catalog (Sources/ChirpConsole/ChirpConsole.docc).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin.git", from: "1.5.0")
    ],
    targets: [
        .target(
            name: "ChirpConsole",
            dependencies: [
                .product(name: "Chirp", package: "chirp"),
                .product(name: "ChirpLogs", package: "chirp"),
                .product(name: "ChirpDiscovery", package: "chirp"),  // the peer directory browses
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio")
            ],
            resources: [.copy("Resources")]
        ),
        // Its own executable, so that `chirp` stays small and quick to start (`chirp console` runs it).
        .executableTarget(
            name: "chirp-console",
            dependencies: [
                "ChirpConsole",
                .product(name: "Chirp", package: "chirp"),
                .product(name: "ChirpLogs", package: "chirp"),
                .product(name: "ChirpCommands", package: "chirp"),  // SecretOptions: CHIRP_SECRET / --secret-file
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log")
            ]
        ),
        .testTarget(
            name: "ChirpConsoleTests",
            dependencies: [
                "ChirpConsole",
                // The processes the tests run beside chirp-console, built into the same folder: logdemo feeds it,
                // `chirp console` starts it.
                .product(name: "logdemo", package: "chirp"),
                .product(name: "chirp", package: "chirp"),
                .product(name: "Chirp", package: "chirp"),
                .product(name: "ChirpLogs", package: "chirp"),
                "ChirpTestSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio")
            ]
        ),
        // The repository's test support (Tests/ChirpTestSupport, through a symbolic link): a target of this package
        // rather than a product of Chirp's, because every product's dependencies are fetched by every user of the
        // package (swift-subprocess would be, for a user of Chirp alone).
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
        )
    ],
    swiftLanguageModes: [.v6]
)
