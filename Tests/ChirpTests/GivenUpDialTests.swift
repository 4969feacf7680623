import Dispatch
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

@testable import Chirp
@testable import ChirpWire

/// A host frozen for a while (every process of it stopped, then continued) finds in its socket queue, once it runs
/// again, the hello of every dial its peers made meanwhile, each followed by the close of their handshake timeout.
/// Such a connection is never established: no event, no part in the tie-break, nothing counted against a dial. Played
/// on a real loopback socket, with the acceptor's event loop blocked while the dialer writes (and closes).
@Suite(.timeLimit(.minutes(1))) struct GivenUpDialTests {
    /// What the acceptor's pipeline reported, in order, as it happens.
    final class Reports: ConnectionDelegate {
        let reports: AsyncStream<String>
        private let continuation: AsyncStream<String>.Continuation
        init() { (reports, continuation) = AsyncStream<String>.makeStream() }
        func connectionEstablished(_ connection: PeerConnection) { continuation.yield("established") }
        func connectionClosed(_ connection: PeerConnection, peerStopping: Bool, refusal: String?) {
            continuation.yield("closed")
        }
        func handshakeFailed(role: ConnectionRole, remote: String, dialedPeerID: String?, error: (any Error)?) {
            continuation.yield("closed before its handshake")
        }
        func afterEventsDelivered(_ body: @escaping @Sendable () -> Void) { body() }
    }

    /// An acceptor with Chirp's pipeline on its own event loop, which the test can block (the host frozen).
    struct Acceptor {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let reports = Reports()
        let server: any Channel
        let port: Int
        static let service = "_given-up._tcp"

        init() async throws {
            let configuration = Configuration(serviceType: Self.service)
            let dispatcher = MessageDispatcher(
                router: Router(), configuration: configuration, hub: EventHub(),
                metrics: TransceiverMetrics(serviceType: Self.service, factory: configuration.metricsFactory))
            let local = Hello(peerID: "acceptor", name: "acceptor", service: Self.service, metadata: [:])
            let reports = self.reports
            server = try await ServerBootstrap(group: group)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addChirpHandlers(
                            role: .acceptor, local: local, configuration: configuration, security: .none,
                            delegate: reports,
                            dispatcher: dispatcher, dialedPeerID: nil, host: nil, established: nil)
                    }
                }
                .bind(host: "127.0.0.1", port: 0).get()
            port = try #require(server.localAddress?.port)
        }

        /// Blocks the acceptor's event loop until the returned semaphore is signalled: the kernel still accepts
        /// connections and queues what they send, as for a stopped process.
        func freeze() async -> DispatchSemaphore {
            let thaw = DispatchSemaphore(value: 0)
            await withCheckedContinuation { (frozen: CheckedContinuation<Void, Never>) in
                group.next().execute {
                    frozen.resume()
                    thaw.wait()
                }
            }
            return thaw
        }

        func shutDown() async throws {
            try await server.close()
            try await group.shutdownGracefully()
        }
    }

    /// The dialer writes a valid hello and, when `givesUp`, closes at once, all while the acceptor is frozen.
    /// Closed, the connection is dropped before its handshake, never established; open (the control), it is.
    @Test(arguments: [true, false]) func aHelloReadTogetherWithItsCloseIsNeverEstablished(givesUp: Bool) async throws {
        let acceptor = try await Acceptor()
        var reports = acceptor.reports.reports.makeAsyncIterator()
        let thaw = await acceptor.freeze()
        let dialer = try await RawPeer(port: acceptor.port)
        try await dialer.send(RawPeer.hello(service: Acceptor.service, id: "dialer"))
        if givesUp { try await dialer.channel.close() }
        thaw.signal()

        if givesUp {
            #expect(await reports.next() == "closed before its handshake")
        } else {
            #expect(await reports.next() == "established")
            try await dialer.waitFor(text: "acceptor")  // the acceptor's hello
            try await dialer.channel.close()
            #expect(await reports.next() == "closed")
        }
        try await acceptor.shutDown()
    }
}
