import Chirp
import Foundation
import NIOConcurrencyHelpers
import Testing

/// A peer that sends faster than an app consumes `messages(of:)`: the app stops reading it, TCP slows it down and its
/// `send` throws once its queue is full; nothing is lost or reordered, and everything arrives once the app consumes.
struct Flood: Codable, Sendable {
    var seq: Int
    var filler: String
}

extension LiveTests {
    @Suite struct BackpressureTests {
        /// Alice (a 1 MiB outbound queue) connected to bob, whose `messages(of: Flood.self)` holds 8-32 messages; one
        /// connection between them.
        static func connectedPair() async throws -> (
            alice: Transceiver, bob: Transceiver, bobPeer: Peer, messages: MessageSequence<Flood>
        ) {
            let type = uniqueServiceType()
            var aliceConfiguration = testConfiguration("alice", serviceType: type)
            aliceConfiguration.outboundLimit = 1 << 20
            aliceConfiguration.includesTools = true  // bob does not advertise himself: a tool, listed on request
            var bobConfiguration = testConfiguration("bob", serviceType: type)
            bobConfiguration.backpressure = .init(lowWatermark: 8, highWatermark: 32)
            // Only bob dials (alice cannot find him): one connection, no tie-break. A retired connection is read to its
            // end whatever the consumer (ConnectionSwitchTests), which would add what alice sent on it to the count.
            bobConfiguration.advertises = false
            let alice = Transceiver(configuration: aliceConfiguration)
            let bob = Transceiver(configuration: bobConfiguration)
            let messages = try bob.messages(of: Flood.self)
            let (bobPeer, _) = try await Pair(alice: alice, bob: bob).connect()
            return (alice, bob, bobPeer, messages)
        }

        @Test func aConsumerThatStopsStopsTheSenderAndLosesNothing() async throws {
            let (alice, bob, bobPeer, messages) = try await Self.connectedPair()
            // Counts what bob's process takes in, consumed or not: without backpressure, everything alice sends.
            let taken = NIOLockedValueBox(0)
            try bob.receive(Flood.self) { _, _ in taken.withLockedValue { $0 += 1 } }

            // Alice offers 4,000 messages of 16 KiB (64 MiB, far more than the sockets' buffers hold) while bob's
            // consumer reads none. A full queue makes her wait and retry; 5 s without progress means she is stopped.
            let filler = String(repeating: "x", count: 16 * 1024)
            let total = 4000
            var accepted = 0
            var lastProgress = ContinuousClock.now
            // The throwing send (the waiting one is what `async` code gets): a synchronous function calls it.
            func sendNow(_ flood: Flood) throws { try alice.send(flood, to: bobPeer) }
            while accepted < total && ContinuousClock.now - lastProgress < .seconds(5) {
                do {
                    try sendNow(Flood(seq: accepted, filler: filler))
                    accepted += 1
                    lastProgress = .now
                } catch let error as ChirpError where error.code == .outboundLimitExceeded {
                    try await Task.sleep(for: .milliseconds(10))
                }
            }
            let takenWhileStopped = taken.withLockedValue { $0 }
            #expect(
                accepted < total, "alice was never stopped: bob took in \(takenWhileStopped) of \(accepted) messages")
            // Bob holds the watermark plus what its last reads brought, not what alice sent.
            #expect(takenWhileStopped < 200, "bob took in \(takenWhileStopped) messages while its consumer read none")

            // Now bob consumes: every message alice's send accepted arrives, in order, once.
            var expected = 0
            for await message in messages {
                #expect(message.payload.seq == expected)
                expected += 1
                if expected == accepted { break }
            }
            #expect(expected == accepted)
            #expect(bob.connectedPeers.count == 1, "the paused connection survived the heartbeat")
            await alice.shutdown()
            await bob.shutdown()
        }

        @Test func theWaitingSendWaitsForAFullPeerAndThenDeliversEverythingInOrder() async throws {
            let (alice, bob, bobPeer, messages) = try await Self.connectedPair()

            let filler = String(repeating: "x", count: 16 * 1024)
            let total = 4000
            let progress = NIOLockedValueBox(0)
            let sender = Task {
                for seq in 0..<total {
                    try await alice.send(Flood(seq: seq, filler: filler), to: bobPeer)
                    progress.withLockedValue { $0 = seq + 1 }
                }
            }
            // While bob consumes nothing, alice's sends stop returning, well before the end: they wait, not throw.
            var last = -1
            var unchangedSince = ContinuousClock.now
            while ContinuousClock.now - unchangedSince < .seconds(3) {
                let now = progress.withLockedValue { $0 }
                if now != last { (last, unchangedSince) = (now, .now) }
                #expect(now < total, "alice sent all \(total) messages while bob consumed none")
                if now == total { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(last < total)

            var expected = 0
            for await message in messages {
                #expect(message.payload.seq == expected)
                expected += 1
                if expected == total { break }
            }
            try await sender.value  // no send threw
            #expect(expected == total)
            await alice.shutdown()
            await bob.shutdown()
        }
    }
}
