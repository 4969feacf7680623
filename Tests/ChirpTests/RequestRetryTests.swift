import Foundation
import NIOCore
import Testing

@testable import Chirp

/// A request that may run twice: sent again when its connection drops after it was sent.
struct CountItems: Codable, Sendable, IdempotentRequest {}
/// A request that must not run twice (not an ``IdempotentRequest``).
struct AppendItem: Codable, Sendable { var title: String }

extension LiveTests {
    /// Requests whose connection drops before the reply, between two real transceivers on loopback: sent again on the
    /// peer's next connection when that is safe (never sent, or idempotent), failing with what happened otherwise.
    @Suite struct RequestRetryTests {
        /// Alice and bob; `aliceDials`: alice's id is the lower, so she dials first, and bob, dialed before he resolved
        /// her, forgets her when the connection closes (he waits for her to dial again). Both may dial at once, and
        /// the tie-break then picks either connection: the two arguments make both roles likely, not certain.
        static func pair(aliceDials: Bool) -> Pair {
            let type = uniqueServiceType()
            var alice = testConfiguration("alice", serviceType: type)
            var bob = testConfiguration("bob", serviceType: type)
            alice.peerID = (aliceDials ? "0-" : "f-") + UUID().uuidString
            bob.peerID = (aliceDials ? "f-" : "0-") + UUID().uuidString
            return Pair(alice: Transceiver(configuration: alice), bob: Transceiver(configuration: bob))
        }

        /// Alice's connection to bob, once both use the same one: when both dialed at once, the tie-break has
        /// settled (a switch after this would retire the connection the test holds or drops).
        static func settledConnection(_ pair: Pair, bob bobPeer: Peer, alice alicePeer: Peer) async throws
            -> PeerConnection
        {
            try await withTimeout(.seconds(20), "alice and bob to use one connection") {
                while true {
                    let ours = try connection(of: pair.alice, to: bobPeer)
                    let theirs = try connection(of: pair.bob, to: alicePeer)
                    if let local = ours.channel.localAddress, local == theirs.channel.remoteAddress { return ours }
                    try await Task.sleep(for: .milliseconds(10))
                }
            }
        }

        /// The connection of `transceiver` to `peer`.
        static func connection(of transceiver: Transceiver, to peer: Peer) throws -> PeerConnection {
            try #require(transceiver.currentEngine?.connection(to: peer.id))
        }

        /// Bob's responder closes the connection the request came on, then waits for the close: its reply finds the
        /// connection closed and is dropped. The request had been written: bob received it.
        static func dropConnection(of bob: Transceiver, to sender: Peer) async throws {
            let connection = try connection(of: bob, to: sender)
            connection.close(goodbye: nil)
            try await connection.channel.closeFuture.get()
        }

        @Test(arguments: [true, false]) func aRequestStillQueuedWhenItsConnectionDropsIsSentOnThePeersNextConnection(
            aliceDials: Bool
        ) async throws {
            let pair = Self.pair(aliceDials: aliceDials)
            let runs = Collected<String>()
            try pair.bob.respond(to: AppendItem.self) { item, _ in
                runs.append(item.title)
                return Echo(text: "added \(item.title)")
            }
            let (bobPeer, alicePeer) = try await pair.connect()
            let first = try await Self.settledConnection(pair, bob: bobPeer, alice: alicePeer)
            // Nothing queued on it is written from now on: the request waits in its queue when the connection drops.
            #expect(first.outbound.hold())
            let alice = pair.alice
            let reply = Task {
                try await alice.request(AppendItem(title: "milk"), to: bobPeer, as: Echo.self, timeout: .seconds(30))
            }
            try await withTimeout(.seconds(20), "the request to wait on the held connection") {
                while await first.exchangesWaiting() == 0 { try await Task.sleep(for: .milliseconds(5)) }
            }
            first.close(goodbye: nil)
            #expect(try await reply.value.text == "added milk")
            // It ran once, on another connection: the first never reached bob.
            #expect(runs.values == ["milk"])
            #expect(try Self.connection(of: pair.alice, to: bobPeer) !== first)
            await pair.stop()
        }

        @Test(arguments: [true, false]) func anIdempotentRequestWhoseConnectionDropsAfterItWasSentIsSentAgain(
            aliceDials: Bool
        ) async throws {
            let pair = Self.pair(aliceDials: aliceDials)
            let runs = Collected<Int>()
            let bob = pair.bob
            try bob.respond(to: CountItems.self) { _, sender async throws -> Int in
                runs.append(runs.values.count + 1)
                if runs.values.count == 1 { try await Self.dropConnection(of: bob, to: sender) }
                return 3
            }
            let (bobPeer, alicePeer) = try await pair.connect()
            let first = try await Self.settledConnection(pair, bob: bobPeer, alice: alicePeer)
            let count = try await pair.alice.request(CountItems(), to: bobPeer, as: Int.self, timeout: .seconds(30))
            #expect(count == 3)
            #expect(runs.values == [1, 2])  // bob ran it on the first connection, whose reply was lost, then again
            #expect(try Self.connection(of: pair.alice, to: bobPeer) !== first)
            await pair.stop()
        }

        /// The control of the test above: the same drop after the request was sent, for a request that is not
        /// idempotent, fails, saying the peer may have run it.
        @Test(arguments: [true, false])
        func aPlainRequestWhoseConnectionDropsAfterItWasSentFailsSayingThePeerMayHaveRunIt(aliceDials: Bool)
            async throws
        {
            let pair = Self.pair(aliceDials: aliceDials)
            let runs = Collected<String>()
            let bob = pair.bob
            try bob.respond(to: AppendItem.self) { item, sender async throws -> Echo in
                runs.append(item.title)
                try await Self.dropConnection(of: bob, to: sender)
                return Echo(text: "added \(item.title)")
            }
            let (bobPeer, alicePeer) = try await pair.connect()
            _ = try await Self.settledConnection(pair, bob: bobPeer, alice: alicePeer)
            let error = await #expect(throws: ChirpError.self) {
                _ = try await pair.alice.request(
                    AppendItem(title: "eggs"), to: bobPeer, as: Echo.self, timeout: .seconds(30))
            }
            #expect(error?.code == .peerDisconnected)
            #expect(error?.messageType == String(reflecting: AppendItem.self))
            #expect(
                error?.reason
                    == "the request had been sent, so the peer may have run it; it was not sent again, since "
                    + "\(String(reflecting: AppendItem.self)) is not an IdempotentRequest")
            #expect(runs.values == ["eggs"])
            await pair.stop()
        }

        @Test(arguments: [true, false]) func aRequestToAPeerThatStopsFailsAtOnceSayingItDidNotRun(aliceDials: Bool)
            async throws
        {
            let pair = Self.pair(aliceDials: aliceDials)
            try pair.bob.respond(to: AppendItem.self) { item, _ in Echo(text: item.title) }
            let (bobPeer, alicePeer) = try await pair.connect()
            let first = try await Self.settledConnection(pair, bob: bobPeer, alice: alicePeer)
            #expect(first.outbound.hold())
            let alice = pair.alice
            let reply = Task {
                try await alice.request(AppendItem(title: "tea"), to: bobPeer, as: Echo.self, timeout: .seconds(60))
            }
            try await withTimeout(.seconds(20), "the request to wait on the held connection") {
                while await first.exchangesWaiting() == 0 { try await Task.sleep(for: .milliseconds(5)) }
            }
            // Bob says goodbye (stopping) and closes: he will not come back, so the request is not sent again.
            await pair.bob.shutdown()
            let error = try await withTimeout(.seconds(20), "the request to fail") {
                do {
                    _ = try await reply.value
                    return nil as ChirpError?
                } catch let error as ChirpError {
                    return error
                }
            }
            #expect(error?.code == .peerDisconnected)
            #expect(error?.reason == "the peer is stopping; the request was not sent, so it did not run")
            await pair.stop()
        }
    }
}
