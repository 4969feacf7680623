import Foundation
import Testing

/// A peer is frozen (SIGSTOP) while another sends to it as fast as it can; then it thaws (SIGCONT).
extension FaultTests {
    @Suite struct FrozenPeerTests {
        /// The sender's outbound limit in these tests.
        static let limit = 1 << 20
        /// What the sender's resident memory may grow by beyond the limit while it floods: encoding buffers, NIO's
        /// allocator, the runtime (a debug build).
        static let overhead = 32 << 20
        static let messageBytes = 16 * 1024

        /// Frozen for less than the heartbeat timeout: the queue stops at the limit, `send` throws, `broadcast` skips the
        /// frozen peer (and still reaches the others); once thawed, everything that was queued arrives, once, in order.
        @Test(.netns) func aFrozenPeerCostsTheSenderAtMostItsOutboundLimitAndGetsTheQueueOnceThawed() async throws {
            let options = [
                "--heartbeat-interval", "1", "--heartbeat-timeout", "60", "--outbound-limit", String(Self.limit)
            ]
            let (harness, _, probes) = try await Harness.connected(hosts: 3, service: "z", options)
            defer { harness.tearDown() }
            let (a, b, c) = (probes[0], probes[1], probes[2])

            b.signal(SIGSTOP)
            defer { b.signal(SIGCONT) }
            var mark = a.mark
            a.command("flood b 4 \(Self.messageBytes)")
            let flood = try await a.waitFor(from: mark, "the flood's report") { $0.event == "flooded" }
            let growth = (flood.rssMax ?? 0) - (flood.rssStart ?? 0)
            measure("frozen.rss-growth", growth / 1024, "KiB")
            measure("frozen.accepted-before-full", (flood.accepted ?? 0) * Self.messageBytes / 1024, "KiB")
            if let firstFull = flood.firstFullAfterMs { measure("frozen.first-full-after", firstFull) }
            #expect((flood.full ?? 0) > 0, "send never threw outboundLimitExceeded: \(flood)")
            #expect(growth <= Self.limit + Self.overhead, "the sender grew by \(growth) bytes")
            #expect(
                !a.events.contains { $0.is("peerDisconnected", name: "b") },
                "b was dropped although within its heartbeat timeout")

            // broadcast: skips b (reported as an error event), reaches c.
            mark = a.mark
            a.command("broadcast 20 \(Self.messageBytes)")
            let broadcast = try await a.waitFor(from: mark, "the broadcast's report") { $0.event == "broadcasted" }
            #expect(broadcast.accepted == 20)
            try await a.waitFor(from: mark, "outboundLimitExceeded reported for b") {
                $0.event == "error" && $0.kind == "outboundLimitExceeded" && $0.peer == "b"
            }
            try await c.waitFor("c got the last broadcast") {
                $0.event == "message" && $0.from == "a" && $0.seq == broadcast.lastSeq
            }

            // Thawed: the queued messages arrive, once and in order.
            let thawed = nowMs()
            b.signal(SIGCONT)
            let lastQueued = flood.lastSeq ?? 0
            let arrived = try await b.waitFor(timeout: 60, "the last flooded message at b") {
                $0.event == "message" && $0.from == "a" && $0.seq == lastQueued
            }
            measure("frozen.queue-drained-after-thaw", arrived.ms - thawed)
            try await a.send(10, to: b)
            let seqs = b.receivedSeqs(from: "a")
            #expect(seqs == seqs.sorted() && Set(seqs).count == seqs.count, "b got duplicates or disorder")
            #expect(!a.events.contains { $0.is("peerDisconnected", name: "b") })
        }

        /// Frozen past the heartbeat timeout: the sender drops it within the bound (and its queue with it); once thawed it
        /// is connected again and messages flow, none twice.
        @Test(.netns) func aPeerFrozenPastItsHeartbeatTimeoutIsDroppedAndReconnectsOnceThawed() async throws {
            let options = [
                "--heartbeat-interval", "0.5", "--heartbeat-timeout", "2.5", "--outbound-limit", String(Self.limit)
            ]
            let (harness, _, probes) = try await Harness.connected(hosts: 2, service: "y", options)
            defer { harness.tearDown() }
            let (a, b) = (probes[0], probes[1])

            var mark = a.mark
            let frozen = nowMs()
            b.signal(SIGSTOP)
            defer { b.signal(SIGCONT) }
            a.command("flood b 5 \(Self.messageBytes)")
            let dropped = try await a.waitFor(from: mark, timeout: 20, "b dropped") {
                $0.is("peerDisconnected", name: "b")
            }
            measure("frozen.dropped-after", dropped.ms - frozen)
            #expect(dropped.ms - frozen <= 2500 + 2000)
            let flood = try await a.waitFor(from: mark, "the flood's report") { $0.event == "flooded" }
            let growth = (flood.rssMax ?? 0) - (flood.rssStart ?? 0)
            measure("frozen-long.rss-growth", growth / 1024, "KiB")
            #expect(growth <= Self.limit + Self.overhead)
            #expect((flood.notConnected ?? 0) > 0, "the flood went on sending to a dropped peer: \(flood)")

            mark = a.mark
            let thawed = nowMs()
            b.signal(SIGCONT)
            let back = try await a.waitFor(from: mark, timeout: 30, "b connected again") {
                $0.is("peerConnected", name: "b")
            }
            measure("frozen.reconnected-after-thaw", back.ms - thawed)
            #expect(back.ms - thawed <= 15_000)
            try await a.send(10, to: b)
            let seqs = b.receivedSeqs(from: "a")
            #expect(Set(seqs).count == seqs.count, "b got a message twice")
            #expect(!a.sawDuplicatePeer && !b.sawDuplicatePeer)
        }
    }
}
