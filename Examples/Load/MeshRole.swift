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
    /// `peerConnected` events the transceivers had reported by then, all together: `expect` each when no peer was
    /// reported connected twice (a duplicate connection, or one dropped and made again).
    var connectEventsAtFull: Int?
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
        let connectEvents = NIOLockedValueBox(0)
        let streams = transceivers.map { $0.makeEvents() }
        for transceiver in transceivers { try await transceiver.start() }

        let fullAt = await withTaskGroup(of: Void.self) { group -> (Double, Double, Int)? in
            for (index, stream) in streams.enumerated() {
                group.addTask {
                    for await event in stream {
                        switch event {
                        case .instanceFound: found.withLockedValue { $0[index] += 1 }
                        case .peerConnected: connectEvents.withLockedValue { $0 += 1 }
                        default: break
                        }
                    }
                }
            }
            defer { group.cancelAll() }
            var full: (Double, Double, Int)?
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
                    // The events stream is delivered in order on its own queue: wait until it has caught up with
                    // the connections the status saw (bounded), so that the count is not read before them.
                    let expected = expect * count
                    let deadline = ContinuousClock.now + .seconds(5)
                    while connectEvents.withLockedValue({ $0 }) < expected, ContinuousClock.now < deadline {
                        try? await Task.sleep(for: .milliseconds(5))
                    }
                    full = (status.seconds, status.at, connectEvents.withLockedValue { $0 })
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
            fullAt: fullAt?.1, connectEventsAtFull: fullAt?.2, minConnected: minConnected, rssBeforeKiB: rssBefore,
            rssKiB: ProcessStats.rssKiB(),
            pssKiB: ProcessStats.pssKiB(), cpuSeconds: ProcessStats.cpuSeconds(), openFiles: ProcessStats.openFiles())
        emitJSON(summary)
        say(
            "\(process): \(count) transceiver(s), fewest connected \(minConnected)/\(expect), RSS \(summary.rssKiB) KiB, PSS \(summary.pssKiB) KiB"
        )
        for transceiver in transceivers { await transceiver.shutdown() }
        return fullAt != nil
    }
}
