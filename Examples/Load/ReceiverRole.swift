import Chirp
import Foundation
import Logging
import NIOConcurrencyHelpers

/// A receiver's final counts for one sender (printed as its JSON line and sent to the sender in ``LoadReport``).
struct ReceiverSummary: Codable, Sendable {
    var role = "receiver"
    var name: String
    var label: String
    var sender: String
    /// Ticks the sender says it broadcast (from ``LoadEnd``); `nil` when the end never arrived.
    var total: UInt64?
    var received: UInt64
    var distinct: UInt64
    var duplicated: UInt64
    var reordered: UInt64
    /// `total - distinct`; `nil` without an end.
    var lost: UInt64?
    /// From the first tick to the last.
    var seconds: Double
    var messagesPerSecond: Double
    var senderDisconnects: Int
    var ackFailures: Int
    var rssKiB: Int
    var pssKiB: Int
    var cpuSeconds: Double
}

/// Joins the service, checks the sequence numbers of every sender's ticks, acknowledges them and reports.
struct ReceiverRole {
    var options: Options

    private struct Stream {
        var senderName: String
        var check = SequenceCheck()
        var first: ContinuousClock.Instant?
        var last: ContinuousClock.Instant?
        var total: UInt64?
        var disconnects = 0
        var ackFailures = 0
    }

    func run(stop: StopSignal) async throws -> Bool {
        let name = try options.string("name", default: "recv-\(getpid())")
        let ackEvery = UInt64(max(1, try options.int("ack-every", default: 256)))
        let timeout = try options.double("timeout", default: 600)
        var configuration = Configuration(serviceType: try options.string("service"))
        configuration.peerName = name
        configuration.interface = options.interface
        configuration.metadata = ["load-role": "receiver"]
        configuration.logger = Logger(label: "chirp-load")
        configuration.logger.logLevel = try options.logLevel(default: .notice)  // why a connection closed, when it did
        let transceiver = Transceiver(configuration: configuration)

        let streams = NIOLockedValueBox<[String: Stream]>([:])
        try transceiver.receive(LoadTick.self) { tick, sender in
            let ack = streams.withLockedValue { streams -> UInt64? in
                var stream = streams[sender.id] ?? Stream(senderName: sender.name)
                stream.check.record(tick.seq)
                let now = ContinuousClock.now
                if stream.first == nil { stream.first = now }
                stream.last = now
                streams[sender.id] = stream
                return (tick.seq + 1) % ackEvery == 0 ? stream.check.next : nil
            }
            guard let ack else { return }
            do {
                try transceiver.send(LoadAck(next: ack), to: sender)
            } catch {
                streams.withLockedValue { $0[sender.id]?.ackFailures += 1 }
            }
        }
        try transceiver.receive(LoadEnd.self) { end, sender in
            streams.withLockedValue { streams in
                var stream = streams[sender.id] ?? Stream(senderName: sender.name)
                stream.total = end.total
                streams[sender.id] = stream
            }
        }
        let events = transceiver.makeEvents()
        let disconnects = Task {
            for await event in events {
                if case .peerDisconnected(let peer) = event {
                    streams.withLockedValue { $0[peer.id]?.disconnects += 1 }
                }
            }
        }
        defer { disconnects.cancel() }
        try await transceiver.start()
        say("\(name): listening on port \(transceiver.port ?? 0), waiting for a sender")

        let ended = await poll(timeout: timeout, interval: .milliseconds(100), stop: stop) {
            streams.withLockedValue { streams in !streams.isEmpty && streams.values.allSatisfy { $0.total != nil } }
        }
        if !ended { say("\(name): \(stop.isSet ? "stopped" : "timed out") before the sender's end") }

        let snapshot = streams.withLockedValue { $0 }
        let connected = transceiver.connectedPeers
        var clean = ended
        for (id, stream) in snapshot.sorted(by: { $0.key < $1.key }) {
            let summary = makeSummary(name: name, stream: stream)
            emitJSON(summary)
            say(
                "\(name): from \(stream.senderName): \(summary.distinct)/\(summary.total.map(String.init) ?? "?") ticks, "
                    + "lost \(summary.lost.map(String.init) ?? "?"), duplicated \(summary.duplicated), reordered \(summary.reordered), "
                    + "\(fixed(summary.messagesPerSecond, 0)) msg/s, RSS \(summary.rssKiB) KiB")
            clean = clean && summary.lost == 0 && summary.duplicated == 0 && summary.reordered == 0
            if let sender = connected.first(where: { $0.id == id }) {
                try? await transceiver.send(LoadReport(summary: summary), to: sender)
            }
        }
        if snapshot.isEmpty {
            say("\(name): no ticks received")
            clean = false
        }
        // Give the report time to leave: the sender disconnects once it has every report.
        let senders = Set(snapshot.keys)
        _ = await poll(timeout: 15, interval: .milliseconds(100), stop: StopSignal.never) {
            !transceiver.connectedPeers.contains { senders.contains($0.id) }
        }
        await transceiver.shutdown()
        return clean
    }

    private func makeSummary(name: String, stream: Stream) -> ReceiverSummary {
        let span: Double
        if let first = stream.first, let last = stream.last {
            let elapsed = last - first
            span = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        } else {
            span = 0
        }
        let check = stream.check
        return ReceiverSummary(
            name: name, label: options.label, sender: stream.senderName, total: stream.total,
            received: check.received, distinct: check.distinct, duplicated: check.duplicated,
            reordered: check.reordered,
            lost: stream.total.map { $0 > check.distinct ? $0 - check.distinct : 0 },
            seconds: span, messagesPerSecond: span > 0 ? Double(check.distinct) / span : 0,
            senderDisconnects: stream.disconnects, ackFailures: stream.ackFailures,
            rssKiB: ProcessStats.rssKiB(), pssKiB: ProcessStats.pssKiB(), cpuSeconds: ProcessStats.cpuSeconds())
    }
}
