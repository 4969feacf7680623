// swift-tools-version: 6.1
// Allocation counts of the message path (issue 16's goal: at most 2 per small message on each side), measured with
// package-benchmark's malloc interposer and checked against Thresholds/ by `make alloc-check` (in `make test`).
//
// A package of its own, so that Chirp's users never resolve package-benchmark: it depends on the checkout through
// the `chirp` link that `make alloc-check` creates beside this file (a path dependency is named after its folder).
import PackageDescription

let package = Package(
    name: "ChirpAllocations",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(path: "chirp"),
        .package(url: "https://github.com/ordo-one/benchmark.git", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2")
    ],
    targets: [
        .executableTarget(
            name: "Allocations",
            dependencies: [
                .product(name: "Chirp", package: "chirp"),
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio")
            ],
            path: "Benchmarks/Allocations",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        )
    ],
    swiftLanguageModes: [.v6]
)
