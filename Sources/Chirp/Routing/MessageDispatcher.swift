import ChirpSupport
import ChirpWire
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// Delivers what arrives on established connections: message frames to the ``Router``'s handlers, request frames to
/// the responder for their type (async ones through the ``ResponderPool``), the reply back on the same connection.
///
/// Called by ``PeerChannelHandler`` on the connection's event loop. One per transceiver run. What it needs of the
/// connection a frame arrived on is an ``InboundConnection`` (who sent it, where the reply goes): Routing does not
/// know Transport's connection.
final class MessageDispatcher: Sendable {
    private let router: Router
    private let coder: any MessageCoder
    private let hub: EventHub
    private let logger: Logger
    /// Runs async responders, at most `maximumConcurrentResponders` at once; cancelled at ``cancelResponders()``.
    private let responders: ResponderPool
    /// Which messages nobody handles were warned about (once per type name and peer, bounded).
    private let unhandledTypes = NIOLockedValueBox(UnhandledTypeWarnings())

    /// The run's metrics: the channel handlers count frames and bytes through it.
    let metrics: TransceiverMetrics

    init(router: Router, configuration: Configuration, hub: EventHub, metrics: TransceiverMetrics) {
        self.metrics = metrics
        self.router = router
        self.coder = configuration.coder
        self.hub = hub
        self.logger = configuration.logger
        self.responders = ResponderPool(limit: configuration.maximumConcurrentResponders)
    }

    /// A message frame arrived: runs the handlers for its type (typed ones in registration order, then the
    /// `receive(RawMessage.self)` ones). A handler that fails is reported; the others still run.
    func route(_ message: MessageBody, from connection: some InboundConnection) {
        let handlers = router.handlers(for: MessageTypeName.routed(message.typeName))
        if handlers.isEmpty {
            warnUnhandled(message.typeName, from: connection.peer)
            return
        }
        let delivery = Router.Delivery(
            peer: connection.peer, connection: ObjectIdentifier(connection), gate: connection.readPause)
        for handler in handlers {
            do {
                try handler.invoke(message, delivery, coder)
            } catch let error as ChirpError {
                report(error, logLevel: .error)
            } catch {
                report(
                    .handlerFailed(type: message.typeName, peer: connection.peer, reason: "\(error)"), logLevel: .error)
            }
        }
    }

    /// A type nobody handles: counted; an event and a warning once per type and peer (bounded), the warning naming
    /// registered look-alikes.
    private func warnUnhandled(_ typeName: String, from peer: Peer) {
        metrics.messagesUnhandled.increment()
        let (warn, isLast) = unhandledTypes.withLockedValue { state in
            (state.shouldWarn(typeName: typeName, peerID: peer.id), state.isFull)
        }
        guard warn else { return }
        hub.emit(.unhandledMessage(typeName: typeName, from: peer))
        let lookalikes = UnhandledTypeWarnings.lookalikes(of: typeName, among: router.registeredTypeNames())
        logger.warning(
            "\(UnhandledTypeWarnings.message(typeName: typeName, peer: peer, lookalikes: lookalikes, isLast: isLast))")
    }

    /// A request frame arrived: runs its type's responder and sends the reply (or the failure) on `connection` only.
    func handleRequest(_ request: RequestBody, from connection: some InboundConnection) {
        let allocator = connection.allocator
        let coder = self.coder
        let typeName = request.message.typeName
        connection.owesReply()
        guard let responder = router.responder(for: MessageTypeName.routed(typeName)) else {
            connection.sendReply(
                PayloadCoding.failureFrame(
                    id: request.requestID, status: .noResponder, typeName: typeName,
                    message: "no responder for \(typeName)", allocator: allocator))
            return
        }
        switch responder {
        case .sync(let replyTypeName, let body):
            // The handler runs inside the writing of the frame, its reply encoded straight into it.
            let peer = connection.peer
            Self.reply(to: request, on: connection, typeName: replyTypeName) {
                try body(request.message, peer, coder, &$0)
            }
        case .async(let body):
            // Called from an event loop, so the async responder needs a task of its own: the pool runs it, or queues
            // it (and stops reading this peer) while maximumConcurrentResponders run.
            let peer = connection.peer
            responders.submit(
                ResponderPool.Job(connection: ObjectIdentifier(connection), gate: connection.readPause) {
                    let reply: Router.Reply
                    do {
                        reply = try await body(request.message, peer, coder)
                    } catch  where Task.isCancelled {
                        // Cancelled by shutdown(): nothing is sent, the connection is closing and the requester hears that.
                        return
                    } catch {
                        Self.reply(to: request, on: connection) { _ in throw error }
                        return
                    }
                    Self.reply(to: request, on: connection, typeName: reply.typeName, reply.writePayload)
                })
        }
    }

    /// Queues the ok response to `request` on `connection`, of type `typeName`, whose payload `writePayload` appends
    /// (a failure response in its place when that throws).
    private static func reply(
        to request: RequestBody, on connection: some InboundConnection, typeName: String,
        _ writePayload: (inout ByteBuffer) throws -> PayloadFlags
    ) {
        reply(to: request, on: connection) { buffer in
            try PayloadCoding.writeResponse(
                id: request.requestID, status: .ok, typeName: typeName, into: &buffer, writePayload: writePayload)
        }
    }

    /// Queues the response to `request` on `connection`, built in memory this thread reuses (``CodingScratch``): the
    /// connection copies a small frame into its batch, so the next reply is built in the same memory.
    private static func reply(
        to request: RequestBody, on connection: some InboundConnection,
        _ writeResponse: (inout ByteBuffer) throws -> Void
    ) {
        let scratch = CodingScratch.forThisThread
        var frame = scratch.takeFrameBuffer() ?? connection.allocator.buffer(capacity: 128)
        writeReply(to: request, into: &frame, writeResponse)
        connection.sendReply(frame)
        scratch.giveBack(frame, ifAtMost: connection.copiedFrameLimit)
    }

    /// Appends to `buffer` the response frame that `writeResponse` appends, or, when it throws (the request did not
    /// decode, the responder failed, the reply did not encode), what it wrote taken back and a failure frame with
    /// the error's status in its place.
    private static func writeReply(
        to request: RequestBody, into buffer: inout ByteBuffer, _ writeResponse: (inout ByteBuffer) throws -> Void
    ) {
        let start = buffer.writerIndex
        let failure: any Error
        do {
            try writeResponse(&buffer)
            return
        } catch {
            buffer.moveWriterIndex(to: start)
            failure = error
        }
        let status: ResponseStatus
        if (failure as? ChirpError)?.code == .decodingFailed { status = .undecodable } else { status = .failed }
        let message = (failure as? ChirpError).map { "\($0)" } ?? "\(failure)"
        PayloadCoding.writeFailure(
            id: request.requestID, status: status, typeName: request.message.typeName, message: message,
            into: &buffer)
    }

    /// Cancels the running async responders and drops the queued ones (at shutdown).
    func cancelResponders() {
        responders.cancelAll()
    }

    /// Logs `error` and delivers it as an ``TransceiverEvent/error(_:)`` event.
    func report(_ error: ChirpError, logLevel: Logger.Level) {
        logger.log(level: logLevel, "\(error)")
        hub.emit(.error(error))
    }
}

/// The connection a message or request arrived on, as the ``MessageDispatcher`` sees it: who sent it, the read gate
/// that stops reading it while a consumer is full, and where the reply to a request goes. ``PeerConnection`` is one.
protocol InboundConnection: AnyObject, Sendable {
    /// The peer at the other end.
    var peer: Peer { get }
    /// Stops reading from the peer while a consumer of its messages is full.
    var readPause: (any ReadPause)? { get }
    /// The largest frame ``sendReply(_:)`` copies into the connection's own memory: a reply up to this size is
    /// built in memory the thread reuses for the next one.
    var copiedFrameLimit: Int { get }
    /// The allocator replies are built with.
    var allocator: ByteBufferAllocator { get }
    /// A request arrived: its reply is owed (a retired connection stays open until it is sent).
    func owesReply()
    /// Queues the reply to a request that arrived here (after ``owesReply()``).
    func sendReply(_ frame: ByteBuffer)
}
