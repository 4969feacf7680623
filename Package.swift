// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "Chirp",
    platforms: [.macOS(.v13)],
    products: [
        .library(name: "Chirp", targets: ["Chirp"]),
        .executable(name: "chat", targets: ["chat"]),
        .library(name: "ChirpLogs", targets: ["ChirpLogs"]),
        .executable(name: "chirp", targets: ["chirp"]),
        .executable(name: "logdemo", targets: ["logdemo"]),
        .executable(name: "logbench", targets: ["logbench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
    ],
    targets: [
        // The system's DNS-SD API: Avahi's Bonjour compatibility library on Linux, dns_sd.h on macOS.
        .systemLibrary(
            name: "CDNSSD",
            pkgConfig: "avahi-compat-libdns_sd",
            providers: [.apt(["libavahi-compat-libdnssd-dev"]), .brew([])]
        ),
        .target(
            name: "Chirp",
            dependencies: [
                "CDNSSD",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "chat",
            dependencies: [
                "Chirp",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Examples/Chat"
        ),
        // The log-streaming channel: a swift-log backend that streams records to `chirp logs` viewers.
        .target(
            name: "ChirpLogs",
            dependencies: [
                "Chirp",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        // The `chirp` command-line tool. `chirp logs` lives in Sources/chirp/Logs/.
        .executableTarget(
            name: "chirp",
            dependencies: [
                "Chirp",
                "ChirpLogs",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "logdemo",
            dependencies: [
                "Chirp",
                "ChirpLogs",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "Examples/LogDemo"
        ),
        .executableTarget(
            name: "logbench",
            dependencies: [
                "Chirp",
                "ChirpLogs",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Benchmarks/LogBench"
        ),
        .testTarget(
            name: "ChirpLogsTests",
            dependencies: [
                "Chirp",
                "ChirpLogs",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "ChirpTests",
            dependencies: [
                "Chirp",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOTestUtils", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
