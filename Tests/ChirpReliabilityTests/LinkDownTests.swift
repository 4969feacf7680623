import Foundation
import Testing

/// A host's link is cut for 10 s, then restored.
extension FaultTests {
    @Suite struct LinkDownTests {
        static let heartbeat = ["--heartbeat-interval", "0.5", "--heartbeat-timeout", "2.5"]
        /// Noticing the cut: heartbeat timeout + slack.
        static let disconnectBoundMs = 2500 + 2000
        /// Reconnecting once the link is back.
        static let reconnectBoundMs = 15_000

        /// Waits (up to `timeout` s) until each observer, from its mark, reports `event` about the probe `name`;
        /// records the time since `start` (`KEY.OBSERVER`) and expects it within `boundMs`.
        static func expectReported(
            _ event: String, of name: String, by observers: [(ProbeProcess, Int)], timeout: Double, since start: Int,
            within boundMs: Int, measuredAs key: String
        ) async throws {
            for (observer, mark) in observers {
                let seen = try await observer.waitFor(from: mark, timeout: timeout, "\(event) of \(name)") {
                    $0.is(event, name: name)
                }
                measure("\(key).\(observer.name)", seen.ms - start)
                #expect(
                    seen.ms - start <= boundMs,
                    "\(observer.name) reported \(event) of \(name) after \(seen.ms - start) ms")
            }
        }

        @Test(.netns) func aCutLinkIsNoticedWithinTheHeartbeatBoundAndHealsWithoutDuplicates() async throws {
            let (harness, _, probes) = try await Harness.connected(hosts: 3, service: "l", Self.heartbeat)
            defer { harness.tearDown() }
            let (a, b, c) = (probes[0], probes[1], probes[2])

            // Traffic before the cut: all of it arrives.
            let before = try await a.send(50, to: c)

            let marks = (a: a.mark, b: b.mark, c: c.mark)
            let cut = nowMs()
            try harness.run(["link-down", "h3"])
            try await Self.expectReported(
                "peerDisconnected", of: "c", by: [(a, marks.a), (b, marks.b)], timeout: 20, since: cut,
                within: Self.disconnectBoundMs, measuredAs: "link.disconnected")
            for name in ["a", "b"] {
                let lost = try await c.waitFor(from: marks.c, timeout: 20, "\(name) disconnected on c") {
                    $0.is("peerDisconnected", name: name)
                }
                measure("link.disconnected.c-sees-\(name)", lost.ms - cut)
                #expect(lost.ms - cut <= Self.disconnectBoundMs)
            }
            // Sending while the link is down: refused (not connected) or lost with the connection, never delivered twice.
            let mark = a.mark
            a.command("send c 20 100")
            try await a.waitFor(from: mark, "sends during the cut") { $0.event == "sent" }

            // 10 s after the cut, the link comes back: the length of the fault this test injects, not a settling pause.
            let downFor = 10_000 - (nowMs() - cut)
            if downFor > 0 { try await Task.sleep(for: .milliseconds(downFor)) }
            let restoredMarks = (a: a.mark, b: b.mark, c: c.mark)
            let restored = nowMs()
            try harness.run(["link-up", "h3"])
            try await Self.expectReported(
                "peerConnected", of: "c", by: [(a, restoredMarks.a), (b, restoredMarks.b)], timeout: 40,
                since: restored, within: Self.reconnectBoundMs, measuredAs: "link.reconnected")
            try await c.waitConnected(to: ["a", "b"], from: restoredMarks.c, timeout: 40)

            // Traffic after the repair: all of it arrives, once.
            let after = try await a.send(50, to: c)
            // A fence: one message more, on the same connection and so in order, after anything delivered twice.
            try await a.send(1, to: c)

            let seqs = c.receivedSeqs(from: "a")
            #expect(Set(seqs).count == seqs.count, "c got a message twice: \(seqs)")
            #expect(Set((before.firstSeq ?? 0)...(before.lastSeq ?? 0)).isSubset(of: Set(seqs)))
            #expect(Set((after.firstSeq ?? 0)...(after.lastSeq ?? 0)).isSubset(of: Set(seqs)))
            for probe in [a, b, c] {
                #expect(!probe.sawDuplicatePeer, "\(probe.name) listed a peer twice")
                let peers = probe.events.last { $0.event == "availablePeers" }?.names ?? []
                #expect(peers.count == 2, "\(probe.name) ends with \(peers)")
            }
            for probe in [a, b] {
                let connects = probe.events.filter { $0.is("peerConnected", name: "c") }.count
                #expect(connects == 2, "\(probe.name) reported c connected \(connects) times")
            }
        }
    }
}
