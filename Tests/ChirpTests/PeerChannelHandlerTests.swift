import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import Testing

@testable import Chirp
@testable import ChirpWire

/// The connection's handler on NIO's `EmbeddedChannel`: the frames it writes and the closes it makes for the rules of
/// Docs/Protocol.md sections 5 to 7, byte for byte, with no socket and no other thread.
@Suite(.timeLimit(.minutes(5))) struct PeerChannelHandlerTests {
    /// What the handler reported to the peer table.
    final class Reports: ConnectionDelegate {
        struct Closed: Sendable {
            var peerStopping: Bool
            var refusal: String?
        }
        let established = NIOLockedValueBox<[PeerConnection]>([])
        let closed = NIOLockedValueBox<[Closed]>([])
        func connectionEstablished(_ connection: PeerConnection) {
            established.withLockedValue { $0.append(connection) }
        }
        func connectionClosed(_ connection: PeerConnection, peerStopping: Bool, refusal: String?) {
            closed.withLockedValue { $0.append(Closed(peerStopping: peerStopping, refusal: refusal)) }
        }
        func handshakeFailed(role: ConnectionRole, remote: String, dialedPeerID: String?, error: (any Error)?) {}
        /// No events to deliver here: what waits for them goes on at once.
        func afterEventsDelivered(_ body: @escaping @Sendable () -> Void) { body() }
    }

    /// An embedded channel whose handshake is done: the handler and the connection it made.
    struct Session {
        let channel = EmbeddedChannel()
        let reports = Reports()
        let connection: PeerConnection

        let gate = ReadGate()
        /// Where the handler's dispatcher reports errors (``TransceiverEvent/error(_:)``).
        let hub = EventHub()

        init(
            router: Router = Router(), burstLinger: TimeAmount = Configuration().burstLinger.timeAmount,
            outboundLimit: Int = 1 << 20, remoteFeatures: [String] = []
        ) throws {
            let configuration = Configuration(serviceType: "test")
            let handler = PeerChannelHandler(
                delegate: reports,
                dispatcher: MessageDispatcher(
                    router: router, configuration: configuration, hub: hub,
                    metrics: TransceiverMetrics(serviceType: "test", factory: configuration.metricsFactory)),
                role: .dialer, localID: "local", dialedPeerID: "remote", host: nil, outboundLimit: outboundLimit,
                burstLinger: burstLinger, heartbeatTimeout: 2.5, logger: Logger(label: "test"), readGate: gate)
            try channel.pipeline.syncOperations.addHandler(handler)
            try channel.pipeline.syncOperations.addHandler(gate)
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
            channel.pipeline.fireUserInboundEventTriggered(
                HandshakeCompleted(
                    remote: Hello(
                        peerID: "remote", name: "remote", service: "test", metadata: [:], features: remoteFeatures)))
            connection = try #require(reports.established.withLockedValue { $0.first })
            channel.embeddedEventLoop.run()  // ends the hold until the events of the handshake were delivered
        }

        /// The frames written since the last call: (kind, body), in order, whatever writes carried them.
        func written() throws -> [(kind: UInt8, body: [UInt8])] {
            channel.embeddedEventLoop.run()
            var frames: [(UInt8, [UInt8])] = []
            var bytes = ByteBuffer()
            while var write = try channel.readOutbound(as: ByteBuffer.self) { bytes.writeBuffer(&write) }
            while let length = bytes.readInteger(as: UInt32.self), let kind = bytes.readInteger(as: UInt8.self) {
                frames.append((kind, bytes.readBytes(length: Int(length) - 1) ?? []))
            }
            return frames
        }

        func receive(_ kind: FrameKind, _ body: [UInt8] = []) throws {
            try channel.writeInbound(Frame(kind, body: ByteBuffer(bytes: body)))
            channel.embeddedEventLoop.run()
        }

        /// Sends request `id` (of type `A`, no flags, an empty payload); the future is its response's.
        func request(_ id: UInt64, timeout: TimeAmount) -> EventLoopFuture<ResponseBody> {
            let body = withUnsafeBytes(of: id.bigEndian) { Array($0) } + [0, 0, 1, 65]
            return connection.request(
                id: id, frame: FrameWriter.frame(.request, body: ByteBuffer(bytes: body), allocator: .init()),
                timeout: timeout)
        }
    }

    static let goodbye = FrameKind.goodbye.rawValue

    @Test func smallMessagesQueuedInOneTickLeaveAsOneWrite() throws {
        let session = try Session()
        for value in 0..<3 {
            session.connection.enqueue(
                FrameWriter.frame(.ping, body: ByteBuffer(bytes: [UInt8(value)]), allocator: .init()))
        }
        session.channel.embeddedEventLoop.run()
        let first = try #require(try session.channel.readOutbound(as: ByteBuffer.self))
        #expect(first.readableBytes == 3 * 6)  // three frames of 6 bytes, one buffer
        #expect(try session.channel.readOutbound(as: ByteBuffer.self) == nil)
    }

    /// ``Configuration/burstLinger``: once a write carried a burst, what is queued next waits for the linger's end and
    /// leaves in one write, without a wake-up per send; a message queued once the burst is over leaves at once.
    @Test func duringABurstTheNextBatchLeavesOneLingerLaterAndAfterItMessagesLeaveAtOnce() throws {
        let burst = Configuration.burstFrameCount
        func enqueue(_ session: Session, _ count: Int) {
            for value in 0..<count {
                session.connection.enqueue(
                    FrameWriter.frame(.ping, body: ByteBuffer(bytes: [UInt8(value)]), allocator: .init()))
            }
        }
        let session = try Session(burstLinger: .microseconds(100))
        enqueue(session, burst + 2)
        #expect(try session.written().count == burst + 2)  // a burst: written at once, then the linger starts
        enqueue(session, 3)
        #expect(try session.written().isEmpty)  // waits for the linger: no drain was asked for
        session.channel.embeddedEventLoop.advanceTime(by: .microseconds(99))
        #expect(try session.written().isEmpty)
        session.channel.embeddedEventLoop.advanceTime(by: .microseconds(1))
        #expect(try session.written().count == 3)  // the linger's end writes them, in one write
        enqueue(session, 1)
        #expect(try session.written().count == 1)  // three frames were no burst: the next one leaves at once

        // Control: without a linger, the frames after a burst leave at once.
        let eager = try Session(burstLinger: .zero)
        enqueue(eager, burst + 2)
        #expect(try eager.written().count == burst + 2)
        enqueue(eager, 3)
        #expect(try eager.written().count == 3)
    }

    /// A sending thread remembers the connection it sent on (``RouteCache``) through an anchor that the
    /// connection's queue holds, not through the connection: the route lapses when the connection retires or closes.
    @Test func aRememberedRouteLapsesWhenTheConnectionRetiresOrCloses() throws {
        let scratch = RouteCache.forThisThread
        defer { scratch.forgetRoute() }
        for ending in ["retire", "close"] {
            let session = try Session()
            let owner = ObjectIdentifier(session.reports)
            scratch.remember(session.connection, owner: owner, peerID: "remote")
            #expect(scratch.route(owner: owner, peerID: "remote") === session.connection)
            #expect(scratch.route(owner: owner, peerID: "someone else") == nil)
            #expect(scratch.route(owner: ObjectIdentifier(session.hub), peerID: "remote") == nil)
            weak let anchor = session.connection.sendRoute()
            #expect(anchor != nil, "control: the queue holds the anchor while the connection takes frames")
            if ending == "retire" {
                session.connection.retire()
                session.channel.embeddedEventLoop.run()
            } else {
                try session.channel.close().wait()
            }
            #expect(anchor == nil, "\(ending)")
            #expect(scratch.route(owner: owner, peerID: "remote") == nil, "\(ending)")
            #expect(session.connection.sendRoute() == nil, "\(ending)")
        }
    }

    @Test func aRetiredConnectionSaysGoodbyeAndClosesOnlyOnceThePeerRetiredItToo() throws {
        let session = try Session()
        session.connection.retire()
        #expect(try session.written().map(\.kind) == [Self.goodbye])
        // No new frames.
        #expect(!session.connection.enqueue(FrameWriter.frame(.ping, body: ByteBuffer(), allocator: .init())))
        #expect(session.channel.isActive)  // control: still open while the peer may still send on it
        try session.receive(.goodbye, Array("duplicate".utf8))
        #expect(!session.channel.isActive)
        #expect(session.reports.closed.withLockedValue { $0.map(\.peerStopping) } == [false])
    }

    @Test func theWinnerOfATieBreakWritesNothingUntilThePeerHasFinishedOnTheLoser() throws {
        let winner = try Session()
        let loser = try Session()
        winner.connection.holdOutbound(until: loser.connection)
        loser.connection.retire()
        #expect(try loser.written().map(\.kind) == [Self.goodbye])
        for value in 0..<3 {
            winner.connection.enqueue(
                FrameWriter.frame(.ping, body: ByteBuffer(bytes: [UInt8(value)]), allocator: .init()))
        }
        #expect(try winner.written().isEmpty, "held while the peer may not know of the loser yet")
        // The peer's goodbye on the loser: its table knows both connections and holds the winner's frames for us.
        try loser.receive(.goodbye, Array("duplicate".utf8))
        // The control: what waited is written, in order.
        #expect(try winner.written().map(\.body) == [[0], [1], [2]])
    }

    @Test func anOutboundHoldEndsWhenTheLoserCloses() throws {
        let winner = try Session()
        let loser = try Session()
        winner.connection.holdOutbound(until: loser.connection)
        winner.connection.enqueue(FrameWriter.frame(.ping, body: ByteBuffer(bytes: [7]), allocator: .init()))
        #expect(try winner.written().isEmpty)
        try loser.channel.close().wait()
        loser.channel.embeddedEventLoop.run()
        #expect(try winner.written().map(\.body) == [[7]])
    }

    @Test func aRequestInFlightKeepsARetiredConnectionOpenUntilItsResponse() throws {
        let session = try Session()
        let id = session.connection.makeRequestID()
        let response = session.request(id, timeout: .seconds(30))
        session.connection.retire()
        try session.receive(.goodbye, Array("duplicate".utf8))
        #expect(session.channel.isActive)  // our request is still out
        // An answer to an id nobody waits on changes nothing.
        try session.receive(.response, [0, 0, 0, 0, 0, 0, 0, 99, 0, 0, 0, 1, 65])
        #expect(session.channel.isActive)
        try session.receive(.response, [0, 0, 0, 0, 0, 0, 0, UInt8(id), 0, 0, 0, 1, 65, 0x7B, 0x7D])
        let body = try response.wait()
        #expect(body.requestID == id && body.status == .ok)
        #expect(!session.channel.isActive)
    }

    /// The exchanges' timer, the lifecycle and the close, through the handler: a retired connection whose last
    /// exchange times out closes then, not at its forced close 5 s after it was retired.
    @Test func aRetiredConnectionClosesOnceItsLastRequestTimedOut() throws {
        let session = try Session()
        let response = session.request(7, timeout: .seconds(2))
        session.connection.retire()
        try session.receive(.goodbye, Array("duplicate".utf8))
        session.channel.embeddedEventLoop.advanceTime(by: .milliseconds(1999))
        #expect(session.channel.isActive)  // the request is still out
        session.channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(throws: RequestTimeoutError.self) { try response.wait() }
        #expect(!session.channel.isActive)
    }

    @Test func aRequestTimesOutAndFailsOnce() throws {
        let session = try Session()
        let response = session.request(7, timeout: .seconds(2))
        session.channel.embeddedEventLoop.advanceTime(by: .seconds(3))
        #expect(throws: RequestTimeoutError.self) { try response.wait() }
        try session.receive(.response, [0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 1, 65])  // too late: ignored
        #expect(session.channel.isActive)
    }

    @Test func requestsAndPingsShareOneTimerThatFailsEachAtItsOwnDeadline() throws {
        let session = try Session()
        let loop = session.channel.embeddedEventLoop
        let failed = NIOLockedValueBox<[String]>([])
        func watch<Value>(_ future: EventLoopFuture<Value>, _ name: String) {
            future.whenFailure { error in
                if error is RequestTimeoutError { failed.withLockedValue { $0.append(name) } }
            }
        }
        // Answered before its deadline: its deadline passes later with nothing to fail.
        let answered = session.request(1, timeout: .seconds(10))
        try session.receive(.response, [0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 65])
        #expect(try answered.wait().status == .ok)
        watch(session.request(2, timeout: .seconds(20)), "request 2 (20 s)")
        watch(session.request(3, timeout: .seconds(5)), "request 3 (5 s)")  // earlier than the timer: it comes forward
        watch(session.connection.ping(timeout: .seconds(12)), "ping (12 s)")
        loop.run()

        loop.advanceTime(by: .seconds(4))
        #expect(failed.withLockedValue { $0 }.isEmpty)
        loop.advanceTime(by: .seconds(1))
        #expect(failed.withLockedValue { $0 } == ["request 3 (5 s)"])
        loop.advanceTime(by: .milliseconds(6500))  // 11.5 s, past the answered request's deadline
        #expect(failed.withLockedValue { $0 } == ["request 3 (5 s)"])
        loop.advanceTime(by: .milliseconds(500))
        #expect(failed.withLockedValue { $0 } == ["request 3 (5 s)", "ping (12 s)"])
        loop.advanceTime(by: .milliseconds(7900))
        #expect(failed.withLockedValue { $0 }.count == 2)
        loop.advanceTime(by: .milliseconds(100))
        #expect(failed.withLockedValue { $0 } == ["request 3 (5 s)", "ping (12 s)", "request 2 (20 s)"])
        #expect(session.channel.isActive)  // a timeout fails the exchange, not the connection
    }

    @Test func aGoodbyeStoppingClosesAndFailsWhatIsInFlight() throws {
        let session = try Session()
        let ping = session.connection.ping(timeout: .seconds(30))
        try session.receive(.goodbye, Array("stopping".utf8))
        #expect(!session.channel.isActive)
        #expect(throws: ConnectionClosedError.self) { try ping.wait() }
        #expect(session.reports.closed.withLockedValue { $0.map(\.peerStopping) } == [true])
    }

    @Test func aRefusalAfterTheHellosIsReportedWithItsReason() throws {
        let session = try Session()
        try session.receive(.refuse, Array("not on the list".utf8))
        #expect(!session.channel.isActive)
        #expect(session.reports.closed.withLockedValue { $0.first?.refusal } == "not on the list")
    }

    @Test func slowHandlersRunAtMost50msPerTurnAndTheRestWaitsWithReadingStopped() throws {
        let router = Router()
        let handled = NIOLockedValueBox(0)
        try router.addHandler(for: "slow", type: String.self) { _, _, _ in
            handled.withLockedValue { $0 += 1 }
            usleep(5_000)  // 5 ms a message: 100 messages are half a second of work
        }
        let session = try Session(router: router)
        // One read brings 100 messages, as the frame decoder fires them.
        let message = Frame(.message, body: ByteBuffer(bytes: [0, 0, 4] + Array("slow".utf8) + Array("{}".utf8)))
        for _ in 0..<100 { session.channel.pipeline.fireChannelRead(message) }
        session.channel.pipeline.fireChannelReadComplete()
        // The first turn stops once 50 ms are spent (checked every 16 messages): the rest waits, unread meanwhile.
        let firstTurn = handled.withLockedValue { $0 }
        #expect(firstTurn >= 16 && firstTurn < 100, "\(firstTurn) handled in the first turn")
        #expect(session.gate.isClosed)
        // The next turns handle the rest, in order, and reading resumes.
        session.channel.embeddedEventLoop.run()
        #expect(handled.withLockedValue { $0 } == 100)
        #expect(!session.gate.isClosed)
    }

    @Test func fastHandlersRunInTheTurnTheirFramesArrivedIn() throws {
        let router = Router()
        let handled = NIOLockedValueBox(0)
        try router.addHandler(for: "fast", type: String.self) { _, _, _ in handled.withLockedValue { $0 += 1 } }
        let session = try Session(router: router)
        for _ in 0..<100 {
            try session.channel.writeInbound(Frame(.message, body: ByteBuffer(bytes: [0, 0, 4] + Array("fast".utf8))))
        }
        #expect(handled.withLockedValue { $0 } == 100)  // control for the test above: no turn was cut
        #expect(!session.gate.isClosed)
    }

    @Test func aMalformedFrameIsReportedWithItsPeerAndTheConnectionGoesOn() async throws {
        let router = Router()
        let handled = NIOLockedValueBox(0)
        try router.addHandler(for: "fine", type: String.self) { _, _, _ in handled.withLockedValue { $0 += 1 } }
        let session = try Session(router: router)
        let events = session.hub.makeStream()
        // A type name longer than the frame, then a good message: the first is reported and skipped.
        try session.receive(.message, [0, 0xFF, 0xFF])
        try session.receive(.message, [0, 0, 4] + Array("fine".utf8))
        let reported = try await withTimeout(.seconds(20), "the malformed frame to be reported") { () -> ChirpError? in
            for await event in events {
                if case .error(let error) = event { return error }
            }
            return nil
        }
        let error = try #require(reported)
        #expect(error.code == .protocolViolation)
        #expect(error.peer?.id == "remote")
        #expect(error.cause is MalformedFrameError)
        #expect(handled.withLockedValue { $0 } == 1)
        #expect(session.channel.isActive)
    }

    /// Part frames (Docs/Protocol.md section 3): a large frame is written in parts to a peer that announced them and
    /// whole to one that did not; parts that arrive are reassembled, and parts out of step close the connection.
    @Test func largeFramesLeaveInPartsOnlyForAPeerThatTakesThemAndPartsOutOfStepClose() async throws {
        var large = ByteBuffer()
        FrameWriter.write(.message, into: &large) { body in
            FrameWriter.writeMessageHeader(typeName: "fine", flags: [], into: &body)
            body.writeRepeatingByte(0x22, count: 300 * 1024)
        }
        let newer = try Session(remoteFeatures: ["parts"])
        #expect(newer.connection.submit(large) == .accepted)
        let parts = try newer.written()
        #expect(parts.map(\.kind) == [9, 9, 9])
        #expect(parts.map { $0.body[4] } == [PartFrame.first, 0, PartFrame.last])
        #expect(Array(parts.map { $0.body.dropFirst(5) }.joined()) == Array(large.readableBytesView))
        let older = try Session()
        #expect(older.connection.submit(large) == .accepted)
        #expect(try older.written().map(\.kind) == [FrameKind.message.rawValue])

        // Receiving: the parts give the message back; a part of a stream that is not open closes the connection.
        let router = Router()
        let handled = NIOLockedValueBox<[Int]>([])
        try router.addHandler(for: "fine", type: String.self) { message, _, _ in
            handled.withLockedValue { $0.append(message.payload.readableBytes) }
        }
        let session = try Session(router: router)
        let events = session.hub.makeStream()
        for part in parts { try session.receive(.part, part.body) }
        #expect(handled.withLockedValue { $0 } == [300 * 1024])
        #expect(session.channel.isActive)
        try session.receive(.part, [0, 0, 0, 1, 0, 0xAB])
        let reported = try await withTimeout(.seconds(20), "the broken parts to be reported") { () -> ChirpError? in
            for await event in events {
                if case .error(let error) = event { return error }
            }
            return nil
        }
        let error = try #require(reported)
        #expect(error.code == .protocolViolation)
        #expect("\(error)".contains("a part of stream 1, which is not open"))
        #expect(!session.channel.isActive)
    }

    /// Frames in parts still queued when the connection says goodbye (it lost the tie-break, or the transceiver
    /// stops) go out before the goodbye, every part, though the channel is not writable: as a frame sent whole does,
    /// which NIO holds once queued. The peer's table waits for that goodbye to know it has all we sent on it.
    @Test func partsQueuedWhenTheConnectionSaysGoodbyeAllGoOutBeforeIt() throws {
        var large = ByteBuffer()
        FrameWriter.write(.message, into: &large) { body in
            FrameWriter.writeMessageHeader(typeName: "fine", flags: [], into: &body)
            body.writeRepeatingByte(0x22, count: 300 * 1024)
        }
        for ending in ["retire", "stop"] {
            let session = try Session(remoteFeatures: ["parts"])
            session.channel.isWritable = false  // a slow link: the kernel takes nothing now
            #expect(session.connection.submit(large) == .accepted)
            #expect(session.connection.submit(large) == .accepted)
            #expect(try session.written().isEmpty, "control: nothing is written while the channel is not writable")
            if ending == "retire" {
                session.connection.retire()
            } else {
                session.connection.close(goodbye: "stopping")
            }
            let frames = try session.written()
            #expect(frames.map(\.kind) == [9, 9, 9, 9, 9, 9, Self.goodbye], "\(ending)")
            #expect(frames.filter { $0.kind == 9 && $0.body[4] & PartFrame.last != 0 }.count == 2, "\(ending)")
        }
    }

    /// A reply whose encoding fails half-way, having written a field.
    struct Unencodable: Encodable, Sendable {
        enum Key: String, CodingKey { case first }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Key.self)
            try container.encode("half-written", forKey: .first)
            throw EncodingError.invalidValue(self, .init(codingPath: [], debugDescription: "not today"))
        }
    }
    struct AskUnencodable: Codable, Sendable {}

    /// A synchronous responder writes its reply straight into the response frame; when the request does not decode,
    /// the responder throws or the reply does not encode, what it wrote is taken back and a failure frame with the
    /// right status stands in its place, and the next request on the connection is answered as usual.
    @Test func aSynchronousResponderFailureReplacesItsFrameAndTheConnectionGoesOn() throws {
        let responder = Transceiver(configuration: Configuration(serviceType: "test"))
        try responder.respond(to: Echo.self) { request, _ in Echo(text: request.text.uppercased()) }
        try responder.respond(to: Fails.self) { (_, _) throws -> Echo in throw CocoaError(.fileNoSuchFile) }
        try responder.respond(to: AskUnencodable.self) { _, _ in Unencodable() }
        let session = try Session(router: responder.router)
        /// A request frame's body: id, flags, type name, payload.
        func request(_ id: UInt8, _ type: Any.Type, _ payload: String) -> [UInt8] {
            let name = Array(String(reflecting: type).utf8)
            return [0, 0, 0, 0, 0, 0, 0, id, 0, UInt8(name.count >> 8), UInt8(name.count & 0xFF)] + name
                + Array(payload.utf8)
        }
        try session.receive(.request, request(1, Echo.self, #"{"txet":"hi"}"#))
        try session.receive(.request, request(2, Fails.self, "{}"))
        try session.receive(.request, request(3, AskUnencodable.self, "{}"))
        try session.receive(.request, request(4, Echo.self, #"{"text":"hi"}"#))

        let responses = try session.written()
        #expect(responses.count == 4 && responses.allSatisfy { $0.kind == FrameKind.response.rawValue })
        /// (id, status, type name, payload) of a response frame's body.
        func parse(_ body: [UInt8]) throws -> (id: UInt8, status: UInt8, typeName: String, payload: [UInt8]) {
            var buffer = ByteBuffer(bytes: body)
            let id = buffer.readInteger(as: UInt64.self)
            let status = buffer.readInteger(as: UInt8.self)
            _ = buffer.readInteger(as: UInt8.self)  // flags
            let name = buffer.readInteger(as: UInt16.self).flatMap { buffer.readString(length: Int($0)) }
            return (
                UInt8(try #require(id)), try #require(status), try #require(name),
                buffer.readBytes(length: buffer.readableBytes) ?? []
            )
        }
        let parsed = try responses.map { try parse($0.body) }
        #expect(parsed.map(\.id) == [1, 2, 3, 4])
        #expect(
            parsed.map(\.status)
                == [
                    ResponseStatus.undecodable.rawValue, ResponseStatus.failed.rawValue,
                    ResponseStatus.failed.rawValue, ResponseStatus.ok.rawValue
                ])
        // A failure names the request's type and says why, as text; nothing of the reply begun before it is left.
        let texts = parsed.map { String(decoding: $0.payload, as: UTF8.self) }
        #expect(parsed[0].typeName == String(reflecting: Echo.self) && texts[0].contains("text"))
        #expect(parsed[1].typeName == String(reflecting: Fails.self) && !texts[1].isEmpty)
        #expect(parsed[2].typeName == String(reflecting: AskUnencodable.self) && texts[2].contains("not today"))
        #expect(!texts[2].contains("half-written"))
        // The control: the same responder answers a request that decodes, with its reply's type and value.
        #expect(parsed[3].typeName == String(reflecting: Echo.self))
        #expect(try JSONDecoder().decode(Echo.self, from: Data(parsed[3].payload)).text == "HI")
    }

    @Test func aPingIsAnsweredWithItsBytesAndAPongCompletesOurPing() throws {
        let session = try Session()
        try session.receive(.ping, [1, 2, 3])
        let written = try session.written()
        #expect(written.count == 1 && written[0].kind == FrameKind.pong.rawValue && written[0].body == [1, 2, 3])
        let ping = session.connection.ping(timeout: .seconds(30))
        let sent = try #require(try session.written().first)
        #expect(sent.kind == FrameKind.ping.rawValue)
        try session.receive(.pong, sent.body)
        try ping.wait()
    }
}
