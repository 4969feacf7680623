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

        @Test(.netns) func aCutLinkIsNoticedWithinTheHeartbeatBoundAndHealsWithoutDuplicates() async throws {
            let harness = try Harness(hosts: 3)
            defer { harness.tearDown() }
            let type = uniqueServiceType("l")
            let a = try await harness.probe(on: "h1", name: "a", service: type, Self.heartbeat)
            let b = try await harness.probe(on: "h2", name: "b", service: type, Self.heartbeat)
            let c = try await harness.probe(on: "h3", name: "c", service: type, Self.heartbeat)
            try await a.waitConnected(to: ["b", "c"])
            try await b.waitConnected(to: ["a", "c"])
            try await c.waitConnected(to: ["a", "b"])

            // Traffic before the cut: all of it arrives.
            var mark = a.mark
            a.command("send c 50 100")
            let before = try await a.waitFor(from: mark, "50 sent to c") { $0.event == "sent" }
            #expect(before.accepted == 50)
            try await c.waitFor("a's 50th message") {
                $0.event == "message" && $0.from == "a" && $0.seq == before.lastSeq
            }

            let marks = (a: a.mark, b: b.mark, c: c.mark)
            let cut = nowMs()
            try harness.run(["link-down", "h3"])
            for (observer, mark) in [(a, marks.a), (b, marks.b)] {
                let lost = try await observer.waitFor(from: mark, timeout: 20, "c disconnected") {
                    $0.is("peerDisconnected", name: "c")
                }
                measure("link.disconnected.\(observer.name)", lost.ms - cut)
                #expect(
                    lost.ms - cut <= Self.disconnectBoundMs,
                    "\(observer.name) noticed the cut after \(lost.ms - cut) ms")
            }
            for name in ["a", "b"] {
                let lost = try await c.waitFor(from: marks.c, timeout: 20, "\(name) disconnected on c") {
                    $0.is("peerDisconnected", name: name)
                }
                measure("link.disconnected.c-sees-\(name)", lost.ms - cut)
                #expect(lost.ms - cut <= Self.disconnectBoundMs)
            }
            // Sending while the link is down: refused (not connected) or lost with the connection, never delivered twice.
            mark = a.mark
            a.command("send c 20 100")
            try await a.waitFor(from: mark, "sends during the cut") { $0.event == "sent" }

            // 10 s after the cut, the link comes back.
            let downFor = 10_000 - (nowMs() - cut)
            if downFor > 0 { try await Task.sleep(for: .milliseconds(downFor)) }
            let restoredMarks = (a: a.mark, b: b.mark, c: c.mark)
            let restored = nowMs()
            try harness.run(["link-up", "h3"])
            for (observer, mark) in [(a, restoredMarks.a), (b, restoredMarks.b)] {
                let back = try await observer.waitFor(from: mark, timeout: 40, "c connected again") {
                    $0.is("peerConnected", name: "c")
                }
                measure("link.reconnected.\(observer.name)", back.ms - restored)
                #expect(
                    back.ms - restored <= Self.reconnectBoundMs,
                    "\(observer.name) reconnected \(back.ms - restored) ms after the link came back")
            }
            try await c.waitConnected(to: ["a", "b"], from: restoredMarks.c, timeout: 40)

            // Traffic after the repair: all of it arrives, once.
            mark = a.mark
            a.command("send c 50 100")
            let after = try await a.waitFor(from: mark, "50 sent to c after the repair") { $0.event == "sent" }
            #expect(after.accepted == 50)
            try await c.waitFor("a's last message") {
                $0.event == "message" && $0.from == "a" && $0.seq == after.lastSeq
            }
            try await Task.sleep(for: .seconds(1))  // anything delivered twice would arrive meanwhile

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
