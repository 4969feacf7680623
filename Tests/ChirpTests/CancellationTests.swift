import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing

@testable import Chirp

/// A request or ping whose task is cancelled ends at once with `CancellationError`, however long its timeout: the
/// exchange is forgotten, so that a late answer is dropped, and the connection goes on serving.
extension LiveTests {
    @Suite(.timeLimit(.minutes(3))) struct CancellationTests {
        /// How long a cancelled exchange may take to end, on a loaded machine; the timeouts are far longer.
        static let bound: Duration = .seconds(5)

        /// A transceiver, and a raw peer connected to it that answers nothing by itself (no pong, no reply, no
        /// heartbeat): the test plays it.
        struct Setup {
            let transceiver: Transceiver
            let raw: RawPeer
            let rawPeer: Peer

            init() async throws {
                let type = uniqueServiceType()
                var configuration = testConfiguration("server", serviceType: type)
                configuration.heartbeatTimeout = .seconds(120)  // the raw peer sends no heartbeat
                transceiver = Transceiver(configuration: configuration)
                try await transceiver.start()
                raw = try await RawPeer(port: try #require(transceiver.port))
                try await raw.send(RawPeer.hello(service: type))
                _ = try await raw.waitForFrames(1)  // the server's hello
                let transceiver = self.transceiver
                rawPeer = try await withTimeout(.seconds(20), "the raw peer to connect") {
                    while true {
                        if let peer = transceiver.connectedPeers.first(where: { $0.name == "raw" }) { return peer }
                        try await Task.sleep(for: .milliseconds(5))
                    }
                }
            }

            func stop() async {
                await raw.close()
                await transceiver.shutdown()
            }
        }

        @Test func aCancelledRequestEndsAtOnceAndItsLateReplyIsDropped() async throws {
            let setup = try await Setup()
            let (transceiver, peer) = (setup.transceiver, setup.rawPeer)
            let request = Task {
                try await transceiver.request(
                    RawMessage(typeName: "tests.question", payload: Data("{}".utf8)), to: peer, as: RawMessage.self,
                    timeout: .seconds(600))
            }
            // The request reached the peer, which does not answer it.
            let sent = try await setup.raw.waitForFrame(kind: 4)
            let id = sent.body.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            request.cancel()
            try Self.expectCancellation(await Self.outcome(of: request, within: Self.bound))

            // The late reply is dropped: nothing waits for it, and the connection goes on. The positive control: the
            // next request's reply, sent after it on the same connection, is received.
            try await setup.raw.send(
                Self.response(id: id, type: "tests.answer", json: #"{"late":true}"#))
            let next = Task {
                try await transceiver.request(
                    RawMessage(typeName: "tests.question", payload: Data("{}".utf8)), to: peer, as: RawMessage.self,
                    timeout: .seconds(60))
            }
            let second = try await setup.raw.waitForFrames(3).last(where: { $0.kind == 4 })
            let nextID = try #require(second).body.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            #expect(nextID != id)
            try await setup.raw.send(Self.response(id: nextID, type: "tests.answer", json: #"{"late":false}"#))
            let reply = try await next.value
            #expect(String(decoding: reply.payload, as: UTF8.self) == #"{"late":false}"#)
            #expect(transceiver.connectedPeers.contains(peer))
            let connection = try transceiver.connection(to: peer)
            #expect(await connection.exchangesWaiting() == 0, "the cancelled request is forgotten")
            await setup.stop()
        }

        @Test func aCancelledPingEndsAtOnce() async throws {
            let setup = try await Setup()
            let (transceiver, peer) = (setup.transceiver, setup.rawPeer)
            let ping = Task { try await transceiver.ping(peer, timeout: .seconds(600)) }
            let sent = try await setup.raw.waitForFrame(kind: 6)  // the ping, never ponged
            ping.cancel()
            try Self.expectCancellation(await Self.outcome(of: ping, within: Self.bound))
            // A late pong is dropped; the connection stays up.
            try await setup.raw.send(RawPeer.frame(kind: 7, sent.body))
            let connection = try transceiver.connection(to: peer)
            #expect(await connection.exchangesWaiting() == 0, "the cancelled ping is forgotten")
            #expect(transceiver.connectedPeers.contains(peer))
            await setup.stop()
        }

        @Test func aRequestOfACancelledTaskIsNotSent() async throws {
            let pair = Pair()
            let asked = Collected<String>()
            try pair.bob.respond(to: Echo.self) { echo, _ in
                asked.append(echo.text)
                return echo
            }
            let (bobPeer, _) = try await pair.connect()
            let alice = pair.alice
            let (started, start) = AsyncStream.makeStream(of: Void.self)
            let request = Task {
                for await _ in started { break }  // runs once cancelled
                return try await alice.request(Echo(text: "cancelled"), to: bobPeer, as: Echo.self)
            }
            request.cancel()
            start.yield()
            try Self.expectCancellation(await Self.outcome(of: request, within: Self.bound))
            // The positive control: a request sent after it is answered, and nothing came before it.
            #expect(try await alice.request(Echo(text: "sent"), to: bobPeer, as: Echo.self).text == "sent")
            #expect(asked.values == ["sent"])
            await pair.stop()
        }

        @Test func requestsCancelledAtRandomMomentsAllEndAndTheConnectionGoesOn() async throws {
            // Cancellations that race the event loop's registration of the wait (at once, after a yield, a moment
            // later): none may hang, resume twice or leave its exchange behind. The raw peer answers none of them
            // meanwhile (a responder would keep running after the requester gave up, and fill the responder pool).
            let setup = try await Setup()
            let (transceiver, peer) = (setup.transceiver, setup.rawPeer)
            let question = RawMessage(typeName: "tests.question", payload: Data("{}".utf8))
            for round in 0..<300 {
                let request = Task {
                    try await transceiver.request(question, to: peer, as: RawMessage.self, timeout: .seconds(600))
                }
                if round % 3 == 1 { await Task.yield() }
                if round % 3 == 2 { try await Task.sleep(for: .microseconds(50)) }
                request.cancel()
                try Self.expectCancellation(await Self.outcome(of: request, within: Self.bound), "round \(round)")
            }
            let connection = try transceiver.connection(to: peer)
            #expect(await connection.exchangesWaiting() == 0)
            // The raw peer now answers every request it got: the late replies to the cancelled ones are dropped, and
            // the last request, sent after them all, gets its own.
            let last = Task {
                try await transceiver.request(question, to: peer, as: RawMessage.self, timeout: .seconds(60))
            }
            let deadline = ContinuousClock.now + .seconds(30)
            var answered = 0
            var reply: RawMessage?
            while reply == nil, ContinuousClock.now < deadline {
                let requests = setup.raw.frames.filter { $0.kind == 4 }
                for frame in requests.dropFirst(answered) {
                    let id = frame.body.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                    try await setup.raw.send(Self.response(id: id, type: "tests.answer", json: #"{"id":\#(id)}"#))
                }
                answered = requests.count
                reply = try await Self.outcome(of: last, within: .milliseconds(20))?.get()
            }
            #expect(reply?.typeName == "tests.answer")
            #expect(await connection.exchangesWaiting() == 0)
            #expect(transceiver.connectedPeers.contains(peer))
            await setup.stop()
        }

        /// What `task` ended with, or `nil` when it did not end within `bound` (it is left running then: a task
        /// stuck in a wait that ignores cancellation cannot be waited for).
        static func outcome<T: Sendable>(of task: Task<T, any Error>, within bound: Duration) async -> Result<
            T, any Error
        >? {
            await valueWithin(bound) { () -> Result<T, any Error>? in
                do { return .success(try await task.value) } catch { return .failure(error) }
            }
        }

        /// Fails unless the outcome is a `CancellationError`.
        static func expectCancellation<T>(
            _ outcome: Result<T, any Error>?, _ comment: String = "", sourceLocation: SourceLocation = #_sourceLocation
        ) throws {
            let outcome = try #require(
                outcome, "still waiting \(bound) after the cancellation \(comment)", sourceLocation: sourceLocation)
            switch outcome {
            case .success: Issue.record("answered, not cancelled \(comment)", sourceLocation: sourceLocation)
            case .failure(let error):
                #expect(error is CancellationError, "\(error) \(comment)", sourceLocation: sourceLocation)
            }
        }

        /// A response frame: request id, status (0 = ok), then the message.
        static func response(id: UInt64, type: String, json: String) -> [UInt8] {
            RawPeer.frame(
                kind: 5,
                withUnsafeBytes(of: id.bigEndian, Array.init) + [0]
                    + RawPeer.messageBody(type: type, payload: Array(json.utf8)))
        }
    }
}
