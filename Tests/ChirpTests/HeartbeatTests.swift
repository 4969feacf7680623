import Chirp
import Foundation
import NIOCore
import NIOPosix
import Testing

/// The heartbeat closes connections to peers that went silent, and only those.
extension LiveTests {
    @Suite struct HeartbeatTests {
        /// An app that sends from its own threads faster than its event loop writes keeps that loop running tasks: NIO
        /// runs queued tasks until none is left before it reads sockets again. The loop then reads nothing for seconds,
        /// while the peer's pings wait in the socket. The peer is alive: the connection must stay, and nothing queued on
        /// it may be lost.
        @Test func aPeerIsKeptWhileOurEventLoopIsTooBusyToReadItsPings() async throws {
            let type = uniqueServiceType()
            let busyGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            var aliceConfiguration = testConfiguration("alice", serviceType: type)
            aliceConfiguration.eventLoopGroup = busyGroup
            aliceConfiguration.heartbeatInterval = .milliseconds(200)
            aliceConfiguration.heartbeatTimeout = .seconds(2)
            aliceConfiguration.includesTools = true  // bob does not advertise himself: a tool, listed on request
            var bobConfiguration = testConfiguration("bob", serviceType: type)
            // Only bob dials: with both dialing, the second connection could still be in its handshake on alice's side
            // when her loop stops reading, and bob, keeping that one, would rightly hear nothing on it (a tie-break
            // race that is not this test's subject, seen once in a full run).
            bobConfiguration.advertises = false
            bobConfiguration.heartbeatInterval = .milliseconds(200)
            bobConfiguration.heartbeatTimeout = .seconds(2)
            let alice = Transceiver(configuration: aliceConfiguration)
            let bob = Transceiver(configuration: bobConfiguration)
            let aliceEvents = EventRecorder(alice)
            let bobEvents = EventRecorder(bob)
            let received = Collected<String>()
            try bob.receive(AddItem.self) { item in received.append(item.title) }
            let (bobPeer, _) = try await Pair(alice: alice, bob: bob).connect()

            // Alice's only event loop runs tasks, and nothing else, for 5 s: two and a half heartbeat timeouts. Alice
            // queues messages for bob meanwhile; they wait in her queue.
            let loop = busyGroup.next()
            let busy = keepRunningTasks(on: loop, until: .now() + .seconds(5))
            for index in 0..<20 { try await alice.send(AddItem(title: "item \(index)"), to: bobPeer) }
            try await busy.get()

            try await received.waitForCount(20)
            #expect(received.values == (0..<20).map { "item \($0)" })
            #expect(aliceEvents.disconnectedNames().isEmpty)
            #expect(bobEvents.disconnectedNames().isEmpty)
            #expect(alice.connectedPeers.map(\.name) == ["bob"])

            // The control: with the same heartbeat, a peer that really goes silent (a raw connection that says hello,
            // then nothing, not even a pong) is dropped, and the recorder above sees it. Its bound is generous: only
            // that it happens matters here.
            let silent = try await RawPeer(port: try #require(alice.port))
            try await silent.send(RawPeer.hello(service: type, name: "silent"))
            try await aliceEvents.waitFor("the silent peer connected") { event in
                if case .peerConnected(let peer) = event { return peer.name == "silent" }
                return false
            }
            try await aliceEvents.waitFor(timeout: 30, "the silent peer dropped") { event in
                if case .peerDisconnected(let peer) = event { return peer.name == "silent" }
                return false
            }
            try await silent.waitForClose(timeout: 30)
            #expect(aliceEvents.disconnectedNames() == ["silent"])
            #expect(alice.connectedPeers.map(\.name) == ["bob"])

            await bob.shutdown()
            await alice.shutdown()
            try await busyGroup.shutdownGracefully()
        }
    }
}

/// Keeps `loop` running tasks until `deadline`, each task queuing the next, so that it never gets back to its
/// sockets; like a sender on other threads that queues work faster than the loop does it.
func keepRunningTasks(on loop: any EventLoop, until deadline: NIODeadline) -> EventLoopFuture<Void> {
    let done = loop.makePromise(of: Void.self)
    @Sendable func next() {
        if NIODeadline.now() >= deadline {
            done.succeed()
            return
        }
        usleep(200)
        loop.execute(next)
    }
    loop.execute(next)
    return done.futureResult
}
