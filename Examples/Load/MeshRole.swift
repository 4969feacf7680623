import Chirp
import Foundation
import Logging
import NIOConcurrencyHelpers

/// One transceiver's view in a mesh status line.
struct MeshPeerStatus: Codable, Sendable {
    var name: String
    /// Instances of the service type DNS-SD reported (``TransceiverEvent/instanceFound(instanceName:)``).
    var found: Int
    /// `availablePeers.count`: discovered (resolved) or connected.
    var available: Int
    var connected: Int
}

/// A mesh process's status line, printed every second.
struct MeshStatus: Codable, Sendable {
    var type = "status"
    var process: String
    var label: String
    var at: Double
    var seconds: Double
    var rssKiB: Int
    var openFiles: Int
    var peers: [MeshPeerStatus]
}

/// Printed once, when every transceiver of a mesh process has the expected number of connected peers.
struct MeshFull: Codable, Sendable {
    var type = "full"
    var process: String
    var label: String
    var at: Double
    var seconds: Double
    var rssKiB: Int
}

/// A mesh process's JSON summary line.
struct MeshSummary: Codable, Sendable {
    var type = "summary"
    var role = "mesh"
    var process: String
    var label: String
    var transceivers: Int
    var expect: Int
    /// Seconds from this process's start until every one of its transceivers had `expect` connected peers.
    var fullAfter: Double?
    /// Unix time of that moment, to merge processes' timelines.
    var fullAt: Double?
    var minConnected: Int
    var rssBeforeKiB: Int
    var rssKiB: Int
    var pssKiB: Int
    var cpuSeconds: Double
    var openFiles: Int
}

/// Hosts `count` transceivers in one service and reports, every second, how many peers each found, has available
/// and has connected, until stopped; notes when every one of them reaches `expect` connected peers.
struct MeshRole {
    var options: Options

    func run(stop: StopSignal) async throws -> Bool {
        let process = try options.string("name", default: "peer-\(getpid())")
        let count = max(1, try options.int("count", default: 1))
        let expect = try options.int("expect")
        let timeout = try options.double("timeout", default: 600)
        let service = try options.string("service")
        let rssBefore = ProcessStats.rssKiB()
        let start = ContinuousClock.now
        let logLevel = try options.logLevel(default: .warning)

        let transceivers = (0..<count).map { index in
            var configuration = Configuration(serviceType: service)
            configuration.peerName = count == 1 ? process : "\(process)-\(index)"
            configuration.interface = options.interface
            configuration.logger = Logger(label: "chirp-load")
            configuration.logger.logLevel = logLevel
            return Transceiver(configuration: configuration)
        }
        let found = NIOLockedValueBox([Int](repeating: 0, count: count))
        let streams = transceivers.map { $0.makeEvents() }
        for transceiver in transceivers { try await transceiver.start() }

        let fullAt = await withTaskGroup(of: Void.self) { group -> (Double, Double)? in
            for (index, stream) in streams.enumerated() {
                group.addTask {
                    for await event in stream {
                        if case .instanceFound = event { found.withLockedValue { $0[index] += 1 } }
                    }
                }
            }
            defer { group.cancelAll() }
            var full: (Double, Double)?
            while !stop.isSet, seconds(since: start) < timeout {
                let counts = found.withLockedValue { $0 }
                let peers = transceivers.enumerated().map { index, transceiver in
                    let available = transceiver.availablePeers
                    return MeshPeerStatus(
                        name: transceiver.configuration.peerName, found: counts[index], available: available.count,
                        connected: available.filter(\.isConnected).count)
                }
                let status = MeshStatus(
                    process: process, label: options.label, at: unixTime(), seconds: seconds(since: start),
                    rssKiB: ProcessStats.rssKiB(), openFiles: ProcessStats.openFiles(), peers: peers)
                emitJSON(status)
                if full == nil, peers.allSatisfy({ $0.connected >= expect }) {
                    full = (status.seconds, status.at)
                    emitJSON(
                        MeshFull(
                            process: process, label: options.label, at: status.at, seconds: status.seconds,
                            rssKiB: status.rssKiB))
                    say(
                        "\(process): all \(count) transceiver(s) have \(expect) connected peers after \(fixed(status.seconds)) s"
                    )
                }
                try? await Task.sleep(for: full == nil ? .milliseconds(250) : .seconds(1))
            }
            return full
        }
        let minConnected = transceivers.map(\.connectedPeers.count).min() ?? 0
        let summary = MeshSummary(
            process: process, label: options.label, transceivers: count, expect: expect, fullAfter: fullAt?.0,
            fullAt: fullAt?.1, minConnected: minConnected, rssBeforeKiB: rssBefore, rssKiB: ProcessStats.rssKiB(),
            pssKiB: ProcessStats.pssKiB(), cpuSeconds: ProcessStats.cpuSeconds(), openFiles: ProcessStats.openFiles())
        emitJSON(summary)
        say(
            "\(process): \(count) transceiver(s), fewest connected \(minConnected)/\(expect), RSS \(summary.rssKiB) KiB, PSS \(summary.pssKiB) KiB"
        )
        for transceiver in transceivers { await transceiver.shutdown() }
        return fullAt != nil
    }
}
