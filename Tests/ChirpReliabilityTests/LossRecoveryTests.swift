import Foundation
import Testing

/// A lossy link that carries traffic for a while, then heals: the pair is still connected (or connects again by
/// itself), and every message arrives once and in order. CI-sized by default; `CHIRP_NETNS_LONG=1` (`make netns-long`)
/// runs the long versions whose figures are in Docs/Reliability.md, "Networks that change".
extension FaultTests {
    @Suite(.impair) struct LossRecoveryTests {
        /// `percent` loss each way for `seconds`, with 10 messages each way every 250 ms; then the loss ends.
        static func lossWithTraffic(percent: Int, seconds: Int, figure: String) async throws {
            let (harness, _, probes) = try await Harness.connected(hosts: 2, service: "q", [])
            defer { harness.tearDown() }
            let (a, b) = (probes[0], probes[1])
            for host in harness.hosts { try harness.run(["loss", host, String(percent)]) }
            let start = nowMs()
            var sent: [(ProbeProcess, ProbeEvent)] = []
            while nowMs() - start < seconds * 1000 {
                for (sender, receiver) in [(a, b), (b, a)] {
                    let mark = sender.mark
                    sender.command("send \(receiver.name) 10 100")
                    sent.append((sender, try await sender.waitFor(from: mark, "sent") { $0.event == "sent" }))
                }
                // The pace of the traffic the link carries, not a wait for anything.
                try await Task.sleep(for: .milliseconds(250))
            }
            let dropped = try harness.hosts.reduce(0) { total, host in
                try total
                    + harness.run(["dropped", host]).split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
                    .reduce(0, +)
            }
            measure("\(figure).packets-dropped", dropped, "packets")
            #expect(dropped > 0, "the loss rules dropped nothing: the link was not lossy")
            for host in harness.hosts { try harness.run(["loss", host, "0"]) }
            let healed = nowMs()

            // Connected after the loss (still, or again).
            let marks = (a: a.mark, b: b.mark)
            a.command("peers")
            b.command("peers")
            for (probe, mark, other) in [(a, marks.a, "b"), (b, marks.b, "a")] {
                let peers = try await probe.waitFor(from: mark, "\(probe.name)'s peers") { $0.event == "peers" }
                if !(peers.connected ?? []).contains(other) {
                    try await probe.waitConnected(to: [other], from: mark, timeout: 30)
                }
            }
            measure("\(figure).connected-after-heal", nowMs() - healed)
            // A fence each way: one message more, after everything sent during the loss.
            try await a.send(1, to: b)
            try await b.send(1, to: a)

            let drops = [a, b].map { probe in probe.events.filter { $0.event == "peerDisconnected" }.count }
            measure("\(figure).disconnects", drops.reduce(0, +), "events")
            for (receiver, sender) in [(b, a), (a, b)] {
                let accepted = sent.filter { $0.0 === sender }.flatMap { report -> [Int] in
                    guard let first = report.1.firstSeq, let last = report.1.lastSeq, last >= first else { return [] }
                    return Array(first...last)
                }
                let seqs = receiver.receivedSeqs(from: sender.name)
                measure("\(figure).delivered.\(sender.name)-to-\(receiver.name)", seqs.count, "messages")
                #expect(seqs == seqs.sorted() && Set(seqs).count == seqs.count, "disorder or duplicates: \(seqs)")
                let missing = Set(accepted).subtracting(seqs)
                if drops.allSatisfy({ $0 == 0 }) {
                    #expect(missing.isEmpty, "\(missing.count) of \(accepted.count) accepted messages lost")
                } else {
                    // A connection dropped: what was queued on it went with it (each sender was told by the drop).
                    measure("\(figure).lost-with-a-dropped-connection", missing.count, "messages")
                }
            }
        }

        /// 15 s of 20% loss each way with traffic (`CHIRP_NETNS_LONG=1`: 60 s).
        @Test(.netns) func twentyPercentLossWithTrafficHealsWithNothingLost() async throws {
            try await Self.lossWithTraffic(percent: 20, seconds: LongRuns.enabled ? 60 : 15, figure: "loss20-traffic")
        }

        /// 5 minutes of 5% loss each way with traffic; only with `CHIRP_NETNS_LONG=1`.
        @Test(.netns, .enabled(if: LongRuns.enabled, "the 5-minute run is `make netns-long`'s"))
        func fivePercentLossForFiveMinutesLosesNothing() async throws {
            try await Self.lossWithTraffic(percent: 5, seconds: 300, figure: "loss5-long")
        }
    }
}

/// Whether the long versions of the fault tests run (`CHIRP_NETNS_LONG=1`, `make netns-long`).
enum LongRuns {
    static let enabled = ProcessInfo.processInfo.environment["CHIRP_NETNS_LONG"] == "1"
}
