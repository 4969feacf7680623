// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "Chirp",
    platforms: [.macOS(.v13)],
    products: [
        .library(name: "Chirp", targets: ["Chirp"]),
        .executable(name: "chat", targets: ["chat"]),
        .executable(name: "chirp", targets: ["chirp"]),
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
        // The `chirp` command-line tool: browse, listen, send, ping (and logs, from the log channel).
        .executableTarget(
            name: "chirp",
            dependencies: [
                "Chirp",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
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
        // End-to-end tests of the `chirp` binary: run it as a process against real peers and the real avahi-daemon.
        .testTarget(
            name: "ChirpCLITests",
            dependencies: [
                "Chirp",
                .product(name: "Logging", package: "swift-log"),
            ],
            exclude: ["__Snapshots__"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
