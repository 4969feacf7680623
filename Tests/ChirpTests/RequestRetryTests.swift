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
        /// Alice and bob, one of whom dials the other: `aliceDials`, alice does not advertise herself (a tool, as a
        /// CLI), so only she can dial, and dials bob again after a drop; else bob. One dial, so no tie-break moves the
        /// request to another connection. The one dialed forgets the other when the connection closes (it never
        /// resolved it), and waits for it to dial again. Both include tools in their peers and events.
        static func pair(aliceDials: Bool) -> Pair {
            let type = uniqueServiceType()
            var alice = testConfiguration("alice", serviceType: type)
            var bob = testConfiguration("bob", serviceType: type)
            alice.advertises = !aliceDials
            bob.advertises = aliceDials
            alice.includesTools = true
            bob.includesTools = true
            return Pair(alice: Transceiver(configuration: alice), bob: Transceiver(configuration: bob))
        }

        /// Alice's connection to bob, once both use it and it is the only one between them.
        static func settledConnection(_ pair: Pair, bob bobPeer: Peer, alice alicePeer: Peer) async throws
            -> PeerConnection
        {
            let ports = Set([pair.alice.port, pair.bob.port].compactMap { $0 })
            return try await withTimeout(.seconds(20), "alice and bob to use one connection") {
                while true {
                    let ours = try connection(of: pair.alice, to: bobPeer)
                    let theirs = try connection(of: pair.bob, to: alicePeer)
                    if let local = ours.channel.localAddress, local == theirs.channel.remoteAddress,
                        establishedConnections(toPorts: ports) == 1
                    {
                        return ours
                    }
                    try await Task.sleep(for: .milliseconds(10))
                }
            }
        }

        /// Holds `connection`'s queue (nothing queued on it is written from then on), sends an `AppendItem` titled
        /// `title` from `alice` to `bob`, and returns the request's task once it waits on that connection.
        static func requestOnHeld(
            _ connection: PeerConnection, from alice: Transceiver, _ title: String, to bob: Peer, timeout: Duration
        ) async throws -> Task<Echo, any Error> {
            #expect(connection.outbound.hold())
            let reply = Task {
                try await alice.request(AppendItem(title: title), to: bob, as: Echo.self, timeout: timeout)
            }
            try await withTimeout(.seconds(20), "the request to wait on the held connection") {
                while await connection.exchangesWaiting() == 0 { try await Task.sleep(for: .milliseconds(5)) }
            }
            return reply
        }

        /// The connection of `transceiver` to `peer`.
        static func connection(of transceiver: Transceiver, to peer: Peer) throws -> PeerConnection {
            try #require(transceiver.currentEngine?.connection(to: peer.id))
        }

        /// Alice sends a request on `first`; once bob's responder runs it (it was sent), alice's connection drops, and
        /// only then does the responder return: its reply finds the connection closed. Returns alice's request task.
        static func dropAfterDelivery<Response: Sendable>(
            on first: PeerConnection, runs: Collected<Int>, release: AsyncStream<Void>.Continuation,
            _ request: @escaping @Sendable () async throws -> Response
        ) async throws -> Task<Response, any Error> {
            let reply = Task { try await request() }
            try await runs.waitForCount(1)  // bob runs it: it was sent
            #expect(await first.exchangesWaiting() == 1)  // and it waits on `first`
            first.close(goodbye: nil)
            try await first.channel.closeFuture.get()
            release.yield()
            return reply
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
            #expect(first.role == (aliceDials ? .dialer : .acceptor))
            // Nothing queued on it is written from now on: the request waits in its queue when the connection drops.
            let reply = try await Self.requestOnHeld(
                first, from: pair.alice, "milk", to: bobPeer, timeout: .seconds(30))
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
            let (released, release) = AsyncStream.makeStream(of: Void.self)
            try bob.respond(to: CountItems.self) { _, _ async throws -> Int in
                runs.append(runs.values.count + 1)
                if runs.values.count == 1 { for await _ in released { break } }  // until the connection dropped
                return 3
            }
            let (bobPeer, alicePeer) = try await pair.connect()
            let first = try await Self.settledConnection(pair, bob: bobPeer, alice: alicePeer)
            #expect(first.role == (aliceDials ? .dialer : .acceptor))
            let alice = pair.alice
            let reply = try await Self.dropAfterDelivery(on: first, runs: runs, release: release) {
                try await alice.request(CountItems(), to: bobPeer, as: Int.self, timeout: .seconds(30))
            }
            #expect(try await reply.value == 3)
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
            let runs = Collected<Int>()
            let bob = pair.bob
            let (released, release) = AsyncStream.makeStream(of: Void.self)
            try bob.respond(to: AppendItem.self) { item, _ async throws -> Echo in
                runs.append(runs.values.count + 1)
                for await _ in released { break }  // until the connection dropped
                return Echo(text: "added \(item.title)")
            }
            let (bobPeer, alicePeer) = try await pair.connect()
            let first = try await Self.settledConnection(pair, bob: bobPeer, alice: alicePeer)
            #expect(first.role == (aliceDials ? .dialer : .acceptor))
            let alice = pair.alice
            let reply = try await Self.dropAfterDelivery(on: first, runs: runs, release: release) {
                try await alice.request(AppendItem(title: "eggs"), to: bobPeer, as: Echo.self, timeout: .seconds(30))
            }
            let error = await #expect(throws: ChirpError.self) { _ = try await reply.value }
            #expect(error?.code == .peerDisconnected)
            #expect(error?.messageType == String(reflecting: AppendItem.self))
            #expect(
                error?.reason
                    == "the request had been sent, so the peer may have run it; it was not sent again, since "
                    + "\(String(reflecting: AppendItem.self)) is not an IdempotentRequest")
            #expect(runs.values == [1])
            await pair.stop()
        }

        @Test(arguments: [true, false]) func aRequestToAPeerThatStopsFailsAtOnceSayingItDidNotRun(aliceDials: Bool)
            async throws
        {
            let pair = Self.pair(aliceDials: aliceDials)
            try pair.bob.respond(to: AppendItem.self) { item, _ in Echo(text: item.title) }
            let (bobPeer, alicePeer) = try await pair.connect()
            let first = try await Self.settledConnection(pair, bob: bobPeer, alice: alicePeer)
            #expect(first.role == (aliceDials ? .dialer : .acceptor))
            let reply = try await Self.requestOnHeld(first, from: pair.alice, "tea", to: bobPeer, timeout: .seconds(60))
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
