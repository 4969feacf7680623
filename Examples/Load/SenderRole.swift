import Chirp
import Foundation
import Logging
import NIOConcurrencyHelpers

/// The sender's JSON summary line.
struct SenderSummary: Codable, Sendable {
    var role = "sender"
    var name: String
    var label: String
    var receivers: Int
    /// Ticks broadcast.
    var sent: UInt64
    var seconds: Double
    var broadcastsPerSecond: Double
    /// `sent × receivers / seconds`.
    var deliveriesPerSecond: Double
    var cpuSeconds: Double
    /// CPU time over wall time during the run (1.0 = one core busy).
    var cpuCores: Double
    /// Times the sender waited for the slowest receiver's acknowledgement.
    var windowWaits: Int
    var window: Int
    /// Deliveries `broadcast` skipped because a peer's outbound queue was full (reported as events), per peer name.
    var skipped: [String: Int]
    /// Receivers that disconnected during the run.
    var receiverDisconnects: [String]
    /// True when the window stalled (no acknowledgement for the stall time) and the run ended early.
    var stalled: Bool
    var rssKiB: Int
    var pssKiB: Int
    /// Every receiver's report, as it sent it back.
    var reports: [ReceiverSummary]
}

/// Waits for the receivers, broadcasts ticks as fast as the acknowledgement window lets it for a duration, then
/// collects every receiver's report.
struct SenderRole {
    var options: Options

    private struct Tally {
        var skipped: [String: Int] = [:]
        var disconnected: [String] = []
        var reports: [String: ReceiverSummary] = [:]
    }

    func run(stop: StopSignal) async throws -> Bool {
        let name = try options.string("name", default: "sender")
        let expected = try options.int("receivers")
        let duration = try options.double("seconds", default: 60)
        let window = UInt64(max(1, try options.int("window", default: 4096)))
        let connectTimeout = try options.double("connect-timeout", default: 120)
        let reportTimeout = try options.double("report-timeout", default: 60)
        var configuration = Configuration(serviceType: try options.string("service"))
        configuration.peerName = name
        configuration.interface = options.interface
        configuration.metadata = ["load-role": "sender"]
        configuration.logger = Logger(label: "chirp-load")
        // A skipped delivery is counted from its event, not logged per tick.
        configuration.logger.logLevel = try options.logLevel(default: .error)
        let transceiver = Transceiver(configuration: configuration)

        let tally = NIOLockedValueBox(Tally())
        let events = transceiver.makeEvents()
        try transceiver.receive(LoadReport.self) { report, sender in
            tally.withLockedValue { $0.reports[sender.id] = report.summary }
        }
        try await transceiver.start()
        let launched = ContinuousClock.now
        say("\(name): waiting for \(expected) receivers")
        func receivers() -> [Peer] { transceiver.connectedPeers.filter { $0.metadata["load-role"] == "receiver" } }
        guard
            await poll(
                timeout: connectTimeout, interval: .milliseconds(50), stop: stop, { receivers().count >= expected })
        else {
            say(
                "\(name): only \(receivers().count) of \(expected) receivers connected after \(fixed(seconds(since: launched))) s"
            )
            emitJSON(["role": "sender", "error": "only \(receivers().count) of \(expected) receivers connected"])
            await transceiver.shutdown()
            return false
        }
        let targets = receivers()
        let targetIDs = Set(targets.map(\.id))
        say(
            "\(name): \(targets.count) receivers connected after \(fixed(seconds(since: launched))) s; broadcasting for \(fixed(duration, 0)) s"
        )
        let acks = AckWindow(receivers: targets.map(\.id))
        try transceiver.receive(LoadAck.self) { ack, sender in acks.ack(peer: sender.id, next: ack.next) }

        return await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await event in events {
                    switch event {
                    case .error(let error) where error.code == .outboundLimitExceeded:
                        tally.withLockedValue { $0.skipped[error.peer?.name ?? "?", default: 0] += 1 }
                    case .peerDisconnected(let peer) where targetIDs.contains(peer.id):
                        tally.withLockedValue { $0.disconnected.append(peer.name) }
                        acks.remove(peer: peer.id)
                    default: break
                    }
                }
            }
            group.addTask {
                while !Task.isCancelled {
                    try? await Task.sleep(for: .seconds(1))
                    if acks.failIfStalled(after: 15) { say("\(name): no acknowledgement for 15 s; ending the run") }
                }
            }
            defer { group.cancelAll() }
            return await broadcastAndCollect(
                transceiver: transceiver, name: name, targets: targets, duration: duration, window: window,
                acks: acks, tally: tally, reportTimeout: reportTimeout, stop: stop)
        }
    }

    /// Sends `value` to every receiver without waiting: a receiver whose queue is full is skipped and reported as an
    /// event (what the tally counts). A synchronous function, so that the call is the throwing `send`: in `async` code
    /// the compiler picks the waiting one.
    private static func sendNow(_ value: some Encodable, on transceiver: Transceiver) throws {
        try transceiver.send(value, to: .all)
    }

    private func broadcastAndCollect(
        transceiver: Transceiver, name: String, targets: [Peer], duration: Double, window: UInt64,
        acks: AckWindow, tally: NIOLockedValueBox<Tally>, reportTimeout: Double, stop: StopSignal
    ) async -> Bool {
        let cpuBefore = ProcessStats.cpuSeconds()
        let start = ContinuousClock.now
        let end = start + .milliseconds(Int64(duration * 1000))
        var seq: UInt64 = 0
        var allowed: UInt64 = 0  // ticks below this may go without asking the window again
        var stalled = false
        var failure: String?
        while ContinuousClock.now < end, !stop.isSet {
            if seq >= allowed {
                let minimum = acks.minimum
                if minimum == .max {
                    failure = "every receiver disconnected"
                    break
                }
                if seq >= minimum + window {
                    guard await acks.wait(until: seq + 1 - window) else {
                        stalled = true
                        break
                    }
                }
                allowed = min(acks.minimum, UInt64.max - window) + window
            }
            do {
                try Self.sendNow(LoadTick(seq: seq), on: transceiver)
            } catch {
                failure = "broadcast failed: \(error)"
                break
            }
            seq += 1
        }
        let elapsed = seconds(since: start)
        let cpu = ProcessStats.cpuSeconds() - cpuBefore
        do {
            try Self.sendNow(LoadEnd(total: seq), on: transceiver)
        } catch {
            failure = failure ?? "could not broadcast the end: \(error)"
        }
        // Every receiver reports once it has the end; one that disconnected never will.
        let names = Dictionary(uniqueKeysWithValues: targets.map { ($0.id, $0.name) })
        _ = await poll(timeout: reportTimeout, interval: .milliseconds(100), stop: StopSignal.never) {
            tally.withLockedValue { tally in
                names.allSatisfy { id, name in tally.reports[id] != nil || tally.disconnected.contains(name) }
            }
        }
        let final = tally.withLockedValue { $0 }
        let missing = targets.filter { final.reports[$0.id] == nil }.map(\.name)
        let summary = SenderSummary(
            name: name, label: options.label, receivers: targets.count, sent: seq, seconds: elapsed,
            broadcastsPerSecond: Double(seq) / elapsed,
            deliveriesPerSecond: Double(seq) * Double(targets.count) / elapsed,
            cpuSeconds: cpu, cpuCores: cpu / elapsed, windowWaits: acks.waits, window: Int(window),
            skipped: final.skipped, receiverDisconnects: final.disconnected, stalled: stalled,
            rssKiB: ProcessStats.rssKiB(),
            pssKiB: ProcessStats.pssKiB(), reports: targets.compactMap { final.reports[$0.id] })
        emitJSON(summary)
        say(
            "\(name): \(seq) ticks to \(targets.count) receivers in \(fixed(elapsed)) s: \(fixed(summary.broadcastsPerSecond, 0)) broadcasts/s, "
                + "\(fixed(summary.deliveriesPerSecond, 0)) deliveries/s, CPU \(fixed(cpu)) s (\(fixed(summary.cpuCores, 2)) cores), "
                + "window waits \(summary.windowWaits), skipped \(final.skipped.values.reduce(0, +)), "
                + "disconnects \(final.disconnected.count), reports \(summary.reports.count)/\(targets.count)")
        if let failure { say("\(name): \(failure)") }
        if stalled { say("\(name): the acknowledgement window stalled") }
        if !missing.isEmpty { say("\(name): no report from \(missing.joined(separator: ", "))") }
        await transceiver.shutdown()
        return failure == nil && !stalled && missing.isEmpty && final.skipped.isEmpty && final.disconnected.isEmpty
    }
}
