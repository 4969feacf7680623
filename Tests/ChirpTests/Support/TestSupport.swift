import Chirp
// What every test target shares (unique service types, log capture, child processes), visible in every file here.
@_exported import ChirpTestSupport
import Foundation
import Logging
import NIOConcurrencyHelpers
import Testing

/// A logger for tests: quiet unless CHIRP_TEST_LOG is set (to a level name).
func testLogger(_ label: String) -> Logger {
    var logger = Logger(label: label) { label in
        var handler = StreamLogHandler.standardError(label: label)
        handler.logLevel =
            ProcessInfo.processInfo.environment["CHIRP_TEST_LOG"].flatMap(Logger.Level.init(rawValue:)) ?? .critical
        return handler
    }
    logger.logLevel =
        ProcessInfo.processInfo.environment["CHIRP_TEST_LOG"].flatMap(Logger.Level.init(rawValue:)) ?? .critical
    return logger
}

/// A loopback-only configuration for tests.
func testConfiguration(_ name: String, serviceType: String) -> Configuration {
    var configuration = Configuration(serviceType: serviceType)
    configuration.peerName = name
    configuration.interface = .loopback
    configuration.logger = testLogger(name)
    return configuration
}

/// Collects every event of a transceiver from the moment it is created.
final class EventRecorder: Sendable {
    private let stream: AsyncStream<TransceiverEvent>
    private let box = NIOLockedValueBox<[TransceiverEvent]>([])
    private let task: NIOLockedValueBox<Task<Void, Never>?> = .init(nil)

    init(_ transceiver: Transceiver) {
        stream = transceiver.makeEvents()
        let stream = self.stream
        let box = self.box
        task.withLockedValue { $0 = Task { for await event in stream { box.withLockedValue { $0.append(event) } } } }
    }

    var events: [TransceiverEvent] { box.withLockedValue { $0 } }

    func connectedNames() -> [String] {
        events.compactMap { if case .peerConnected(let peer) = $0 { return peer.name } else { return nil } }
    }

    func disconnectedNames() -> [String] {
        events.compactMap { if case .peerDisconnected(let peer) = $0 { return peer.name } else { return nil } }
    }

    /// Waits until an event recorded so far (or later) satisfies `predicate`; no event can be missed.
    @discardableResult
    func waitFor(timeout: Double = 20, _ what: String, where predicate: @escaping @Sendable (TransceiverEvent) -> Bool)
        async throws -> TransceiverEvent
    {
        try await withTimeout(.seconds(timeout), what) {
            while true {
                if let event = self.events.first(where: predicate) { return event }
                try await Task.sleep(for: .milliseconds(10))
            }
        }
    }

    deinit { task.withLockedValue { $0?.cancel() } }
}

extension Transceiver {
    /// Waits until `count` peers are connected; returns them.
    @discardableResult
    func waitForConnectedPeers(_ count: Int, timeout: Double = 20) async throws -> [Peer] {
        let events = self.makeEvents()
        if connectedPeers.count >= count { return connectedPeers }
        return try await withTimeout(
            .seconds(timeout), "\(count) connected peers (have \(self.connectedPeers.map(\.name)))"
        ) {
            for await event in events {
                if case .availablePeersChanged = event, self.connectedPeers.count >= count {
                    return self.connectedPeers
                }
                if self.connectedPeers.count >= count { return self.connectedPeers }
            }
            return self.connectedPeers
        }
    }

    /// Waits for the first event matching `predicate`.
    func waitForEvent(
        timeout: Double = 20, _ what: String, where predicate: @escaping @Sendable (TransceiverEvent) -> Bool
    ) async throws -> TransceiverEvent {
        let events = self.makeEvents()
        return try await withTimeout(.seconds(timeout), what) {
            for await event in events where predicate(event) { return event }
            throw TimeoutError(what: what, timeout: .seconds(timeout))
        }
    }
}

/// Open file descriptors of this process.
func openFileDescriptorCount() -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
}

/// Tests that start real transceivers, daemons' registrations and processes. They run one at a time (the suites
/// nested in this one, also in extensions, inherit `.serialized` and the time limit of each test), so that
/// process-wide measurements such as open file descriptors and timing-sensitive heartbeats are not disturbed by other
/// tests.
@Suite(.serialized, .timeLimit(.minutes(10))) enum LiveTests {}
