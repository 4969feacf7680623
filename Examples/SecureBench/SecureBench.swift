// securebench: messages per second between two transceivers over loopback, without and with a shared secret
// (TLS 1.2 with a pre-shared key), in one process. Build it in release mode:
//
//     swift build -c release --product securebench && .build/release/securebench
//
// Every run uses a fresh service type on the loopback interface; nothing leaves the machine.
import Chirp
import Foundation
import Logging
import NIOConcurrencyHelpers

/// One small message, as an app would send it (JSON-encoded by the default coder).
struct Tick: Codable, Sendable, ChirpMessage {
    static let chirpTypeName = "bench.tick"
    var sequence: Int
    var text: String
}

/// Counts received messages and wakes whoever waits for a count.
final class Counter: Sendable {
    private let state = NIOLockedValueBox<(count: Int, waiters: [(Int, CheckedContinuation<Void, Never>)])>((0, []))

    func increment() {
        let ready = state.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
            state.count += 1
            let count = state.count
            let ready = state.waiters.filter { $0.0 <= count }.map(\.1)
            state.waiters.removeAll { $0.0 <= count }
            return ready
        }
        ready.forEach { $0.resume() }
    }

    /// Returns once `target` messages were counted.
    func wait(for target: Int) async {
        await withCheckedContinuation { continuation in
            let done = state.withLockedValue { state -> Bool in
                if state.count >= target { return true }
                state.waiters.append((target, continuation))
                return false
            }
            if done { continuation.resume() }
        }
    }
}

/// What one measurement sends.
struct Workload: Sendable {
    var label: String
    var messages: Int
    /// Messages sent before waiting for the receiver to catch up (keeps the outbound queue bounded).
    var batch: Int
    /// Bytes per raw message; `nil` sends ``Tick`` values.
    var rawSize: Int?
}

@main
enum SecureBench {
    static func main() async throws {
        let arguments = CommandLine.arguments.dropFirst()
        let scale = arguments.first.flatMap(Double.init) ?? 1
        let workloads = [
            Workload(label: "small (Tick, 47 B JSON)", messages: Int(100_000 * scale), batch: 2_000, rawSize: nil),
            Workload(label: "raw 1 KiB", messages: Int(50_000 * scale), batch: 2_000, rawSize: 1024),
            Workload(label: "raw 64 KiB", messages: Int(4_000 * scale), batch: 128, rawSize: 64 * 1024),
        ]
        print("securebench: two transceivers in one process, loopback, \(ProcessInfo.processInfo.activeProcessorCount) cores")
        print("mode     workload                     messages   seconds    messages/s        MB/s   ping p50 (µs)")
        for workload in workloads {
            for secure in [false, true] {
                let result = try await measure(workload, secure: secure)
                let megabytes = Double(result.bytes) / 1_000_000 / result.seconds
                print(
                    (secure ? "secret " : "none   ").padding(toLength: 9, withPad: " ", startingAt: 0)
                        + workload.label.padding(toLength: 28, withPad: " ", startingAt: 0)
                        + String(format: "%9d  %8.3f  %12.0f  %10.1f  %14.0f",
                                 workload.messages, result.seconds, Double(workload.messages) / result.seconds,
                                 megabytes, result.pingMedianMicroseconds))
            }
        }
    }

    struct Result {
        var seconds: Double
        var bytes: Int
        var pingMedianMicroseconds: Double
    }

    static func measure(_ workload: Workload, secure: Bool) async throws -> Result {
        let type = "sb" + String(UInt32.random(in: 0...UInt32.max), radix: 16)
        func configuration(_ name: String) throws -> Configuration {
            var configuration = Configuration(serviceType: type)
            configuration.peerName = name
            configuration.interface = .loopback
            configuration.logger = Logger(label: name) { _ in SwiftLogNoOpLogHandler() }
            configuration.outboundLimit = 256 * 1024 * 1024
            if secure { configuration.security = .sharedSecret(try SharedSecret("securebench-\(UUID().uuidString)")) }
            return configuration
        }
        var senderConfiguration = try configuration("sender")
        var receiverConfiguration = try configuration("receiver")
        if case .sharedSecret(let secret) = senderConfiguration.security { receiverConfiguration.security = .sharedSecret(secret) }
        senderConfiguration.peerID = "a-" + UUID().uuidString  // the sender dials (the lower id dials first)
        let sender = Transceiver(configuration: senderConfiguration)
        let receiver = Transceiver(configuration: receiverConfiguration)
        let counter = Counter()
        let received = NIOLockedValueBox(0)
        if workload.rawSize == nil {
            // Payload bytes of one tick, as the default coder encodes it.
            let tickSize = (try? JSONEncoder().encode(Tick(sequence: 50_000, text: "the quick brown fox")).count) ?? 0
            receiver.receive(Tick.self) { _ in
                received.withLockedValue { $0 += tickSize }
                counter.increment()
            }
        } else {
            receiver.receiveAll { message, _ in
                received.withLockedValue { $0 += message.payload.count }
                counter.increment()
            }
        }
        try await receiver.resume()
        try await sender.resume()
        let peer = try await connectedPeer(sender)

        // Warm up (and check the pipeline works) before timing.
        try send(workload, count: min(workload.batch, workload.messages), from: 0, sender: sender, to: peer)
        await counter.wait(for: min(workload.batch, workload.messages))
        let warmUp = min(workload.batch, workload.messages)
        received.withLockedValue { $0 = 0 }

        let clock = ContinuousClock()
        let started = clock.now
        var sent = 0
        while sent < workload.messages {
            let count = min(workload.batch, workload.messages - sent)
            try send(workload, count: count, from: sent, sender: sender, to: peer)
            sent += count
            // Let at most two batches be in flight.
            await counter.wait(for: warmUp + max(sent - workload.batch, 0))
        }
        await counter.wait(for: warmUp + workload.messages)
        let elapsed = clock.now - started

        var pings: [Double] = []
        for _ in 0..<200 {
            let rtt = try await sender.ping(peer)
            pings.append(Double(rtt.components.attoseconds) / 1e12 + Double(rtt.components.seconds) * 1e6)
        }
        pings.sort()
        await sender.stop()
        await receiver.stop()
        return Result(
            seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18,
            bytes: received.withLockedValue { $0 }, pingMedianMicroseconds: pings[pings.count / 2])
    }

    static func send(_ workload: Workload, count: Int, from start: Int, sender: Transceiver, to peer: Peer) throws {
        if let size = workload.rawSize {
            let message = RawMessage(typeName: "bench.raw", payload: Data(repeating: 0x2a, count: size), isBinary: true)
            for _ in 0..<count { try sender.send(message, to: peer) }
        } else {
            for sequence in start..<(start + count) {
                try sender.send(Tick(sequence: sequence, text: "the quick brown fox"), to: peer)
            }
        }
    }

    /// Waits (up to 20 s) until `transceiver` has a connected peer.
    static func connectedPeer(_ transceiver: Transceiver) async throws -> Peer {
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            if let peer = transceiver.connectedPeers.first { return peer }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw BenchError(description: "the two transceivers did not connect within 20 s (is avahi-daemon running?)")
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
}
