import ChirpSupport
import ChirpWire
import Foundation
import NIOCore

/// A message and who sent it, as yielded by ``Transceiver/messages(of:)``.
public struct ReceivedMessage<Payload: Sendable>: Sendable {
    /// The decoded message.
    public var payload: Payload
    /// The peer that sent it.
    public var sender: Peer
}

/// Returned by `receive`; call ``cancel()`` to remove the handler. Handlers stay registered while the token is alive
/// or not; dropping the token does not remove the handler.
public struct HandlerToken: Sendable {
    private let router: Router
    private let token: UInt64

    init(router: Router, token: UInt64) {
        self.router = router
        self.token = token
    }

    /// Removes the handler.
    public func cancel() { router.removeHandler(token: token) }
}

extension Transceiver {
    // MARK: - Receiving

    /// Calls `handler` for every message of type `T`, with its sender.
    ///
    /// Several handlers may be registered for one type; they run in the order they were registered. Handlers run on
    /// the connection's event loop, one message at a time per peer and in the order the peer sent them: keep them
    /// short, and hand longer work to a task or use ``messages(of:)``. A payload that does not decode as `T`, and a
    /// handler that throws, are reported as ``TransceiverEvent/error(_:)`` events and logged.
    ///
    /// ```swift
    /// transceiver.receive(AddItem.self) { item, sender in
    ///     print("\(sender.name) added \(item.title)")
    /// }
    /// ```
    @discardableResult
    public func receive<T: Decodable & Sendable>(
        _ type: T.Type, handler: @escaping @Sendable (_ payload: T, _ sender: Peer) throws -> Void
    ) -> HandlerToken {
        let typeName = MessageTypeName.of(type)
        let token = router.addHandler(for: typeName) { message, delivery, coder in
            let peer = delivery.peer
            let value: T
            do {
                value = try PayloadCoding.decode(T.self, from: message, coder: coder)
            } catch {
                throw ChirpError.decodingFailed(type: typeName, peer: peer, reason: "\(error)", cause: error)
            }
            do {
                try handler(value, peer)
            } catch {
                throw ChirpError.handlerFailed(type: typeName, peer: peer, reason: "\(error)", cause: error)
            }
        }
        return HandlerToken(router: router, token: token)
    }

    /// Calls `handler` for every message of type `T` (the MultipeerKit-style one-argument form).
    @discardableResult
    public func receive<T: Decodable & Sendable>(
        _ type: T.Type, handler: @escaping @Sendable (_ payload: T) throws -> Void
    ) -> HandlerToken {
        receive(type) { payload, _ in try handler(payload) }
    }

    /// Every message of type `T` from now on, with its sender, as an async sequence.
    ///
    /// ```swift
    /// for await message in transceiver.messages(of: ChatLine.self) {
    ///     print("[\(message.sender.name)] \(message.payload.text)")
    /// }
    /// ```
    ///
    /// Nothing is lost and the buffer is bounded: while ``Configuration/Backpressure/highWatermark`` messages wait
    /// for the consumer, Chirp stops reading from the peers that send them, so TCP slows the senders down (see
    /// ``MessageSequence``). A payload that does not decode as `T` is reported as an ``TransceiverEvent/error(_:)``
    /// event, as with ``receive(_:handler:)-(_,(T,Peer)->Void)``. The sequence ends, and its handler is removed, when
    /// the iterating task is cancelled.
    public func messages<T: Decodable & Sendable>(of type: T.Type) -> MessageSequence<T> {
        let typeName = MessageTypeName.of(type)
        return makeMessageSequence { flow, source in
            self.router.addHandler(for: typeName) { message, delivery, coder in
                let value: T
                do {
                    value = try PayloadCoding.decode(T.self, from: message, coder: coder)
                } catch {
                    throw ChirpError.decodingFailed(
                        type: typeName, peer: delivery.peer, reason: "\(error)", cause: error)
                }
                flow.deliver(
                    ReceivedMessage(payload: value, sender: delivery.peer), to: source, from: delivery.connection,
                    gate: delivery.gate)
            }
        }
    }

    /// A ``MessageSequence`` fed by the handler `register` adds (given the flow and the source to deliver to); the
    /// handler is removed when the consumer goes away.
    func makeMessageSequence<T: Sendable>(
        _ register: (MessageFlow, MessageSequence<T>.Producer.Source) -> UInt64
    ) -> MessageSequence<T> {
        let backpressure = configuration.backpressure
        let flow = MessageFlow()
        let new = MessageSequence<T>.Producer.makeSequence(
            backPressureStrategy: .init(
                lowWatermark: backpressure.lowWatermark, highWatermark: backpressure.highWatermark),
            finishOnDeinit: true, delegate: flow)
        let token = register(flow, new.source)
        let router = self.router
        flow.onTerminate { router.removeHandler(token: token) }
        return MessageSequence(producer: new.sequence)
    }

    /// Answers requests of type `Request` with a `Response`; the reply goes to the requester only.
    ///
    /// One responder per request type; a new one replaces the previous. It runs on the connection's event loop, so
    /// keep it short or use the `async` overload. A thrown error reaches the requester as
    /// ``ChirpError/Code/remoteFailure`` with the error's description.
    public func respond<Request: Decodable & Sendable, Response: Encodable & Sendable>(
        to type: Request.Type, with handler: @escaping @Sendable (_ request: Request, _ sender: Peer) throws -> Response
    ) {
        let typeName = MessageTypeName.of(type)
        let responseName = MessageTypeName.of(Response.self)
        router.setResponder(
            for: typeName,
            .sync(replyTypeName: responseName) { message, peer, coder, frame in
                let request = try Self.decodeRequest(
                    Request.self, typeName: typeName, message: message, peer: peer, coder: coder)
                return try PayloadCoding.encode(try handler(request, peer), coder: coder, into: &frame)
            })
    }

    /// Answers requests of type `Request` with a `Response` computed asynchronously; the reply goes to the requester only.
    ///
    /// ```swift
    /// transceiver.respond(to: ListItems.self) { request, sender in
    ///     await store.items()
    /// }
    /// ```
    public func respond<Request: Decodable & Sendable, Response: Encodable & Sendable>(
        to type: Request.Type,
        with handler: @escaping @Sendable (_ request: Request, _ sender: Peer) async throws -> Response
    ) {
        let typeName = MessageTypeName.of(type)
        let responseName = MessageTypeName.of(Response.self)
        router.setResponder(
            for: typeName,
            .async { message, peer, coder in
                let request = try Self.decodeRequest(
                    Request.self, typeName: typeName, message: message, peer: peer, coder: coder)
                return Self.reply(try await handler(request, peer), typeName: responseName, coder: coder)
            })
    }

    private static func decodeRequest<Request: Decodable>(
        _ type: Request.Type, typeName: String, message: MessageBody, peer: Peer, coder: any MessageCoder
    ) throws -> Request {
        do {
            return try PayloadCoding.decode(Request.self, from: message, coder: coder)
        } catch {
            throw ChirpError.decodingFailed(type: typeName, peer: peer, reason: "\(error)", cause: error)
        }
    }

    /// The reply of an async responder: `value`, to be encoded once, into the response frame.
    private static func reply<Response: Encodable & Sendable>(
        _ value: Response, typeName: String, coder: any MessageCoder
    ) -> Router.Reply {
        Router.Reply(typeName: typeName) { try PayloadCoding.encode(value, coder: coder, into: &$0) }
    }

    // MARK: - Sending

    /// Sends `value` to every connected peer. It is encoded once, whatever the number of peers.
    ///
    /// A peer whose outbound queue is full is skipped and reported as an
    /// ``ChirpError/Code/outboundLimitExceeded`` event.
    /// - Throws: ``ChirpError/Code/notRunning``, ``ChirpError/Code/encodingFailed`` or
    ///   ``ChirpError/Code/messageTooLarge``.
    public func broadcast<T: Encodable>(_ value: T) throws {
        guard let engine = currentEngine else { throw ChirpError.notRunning }
        let connections = engine.connections
        guard let first = connections.first else { return }
        try withMessageFrame(value, allocator: first.allocator) { frame in
            enqueue(frame, on: connections, engine: engine)
        }
    }

    /// Runs `body` with the message frame of `value`, built in memory this thread reuses (``CodingScratch``): the
    /// connections copy a small frame into their batch, so the next message is built in the same memory.
    func withMessageFrame<T: Encodable, R>(
        _ value: T, allocator: ByteBufferAllocator, scratch: CodingScratch = .forThisThread,
        _ body: (ByteBuffer) throws -> R
    ) throws -> R {
        var frame = scratch.takeFrameBuffer() ?? allocator.buffer(capacity: 128)
        let coder = configuration.coder
        try PayloadCoding.writeFrame(
            typeName: MessageTypeName.of(T.self), limit: configuration.maximumMessageSize, into: &frame
        ) {
            try PayloadCoding.encode(value, coder: coder, into: &$0)
        }
        let result = try body(frame)
        scratch.giveBack(frame, ifAtMost: OutboundQueue.coalescedFrameLimit)
        return result
    }

    /// The message frame of `value`, encoded once with the configured coder and size limit.
    func messageFrame<T: Encodable>(_ value: T, allocator: ByteBufferAllocator) throws -> ByteBuffer {
        try PayloadCoding.frame(
            value, typeName: MessageTypeName.of(T.self), coder: configuration.coder, allocator: allocator,
            limit: configuration.maximumMessageSize)
    }

    func enqueue(_ frame: ByteBuffer, on connections: [PeerConnection], engine: Engine) {
        for connection in connections {
            let (admission, _) = submitFollowingSwitch(frame, on: connection, engine: engine)
            if admission == .full {
                engine.metrics.outboundLimitHits.increment()
                engine.report(
                    .outboundLimitExceeded(peer: connection.peer, limit: configuration.outboundLimit),
                    logLevel: .warning)
            }
        }
    }

    /// Sends `value` to one peer.
    /// - Throws: ``ChirpError/Code/peerNotConnected``, ``ChirpError/Code/outboundLimitExceeded``, or an
    ///   encoding error.
    public func send<T: Encodable>(_ value: T, to peer: Peer) throws {
        // The connection this thread sent on last, when it was to this peer: no lock to find it. One that closed or
        // lost a tie-break since refuses the frame, and the peer is looked up again.
        let routes = RouteCache.forThisThread
        let owner = ObjectIdentifier(self)
        let remembered = routes.route(owner: owner, peerID: peer.id)
        let connection = try remembered ?? self.connection(to: peer)
        if let frame = try largeDataFrame(value, on: connection) {
            try enqueue(frame, on: connection, remembered: remembered != nil, routes: routes, peer: peer)
            return
        }
        try withMessageFrame(value, allocator: connection.allocator) { frame in
            try enqueue(frame, on: connection, remembered: remembered != nil, routes: routes, peer: peer)
        }
    }

    /// Queues a frame for one peer on `connection`; remembers the connection for this thread's next send, or, when a
    /// remembered one refused the frame, looks the peer up again.
    private func enqueue(
        _ frame: ByteBuffer, on connection: PeerConnection, remembered: Bool, routes: RouteCache, peer: Peer
    ) throws {
        let owner = ObjectIdentifier(self)
        if remembered {
            switch connection.submit(frame) {
            case .accepted:
                return
            case .full:
                currentEngine?.metrics.outboundLimitHits.increment()
                throw ChirpError.outboundLimitExceeded(peer: connection.peer, limit: configuration.outboundLimit)
            case .closed, .retired:
                routes.forgetRoute()
                let current = try self.connection(to: peer)
                try enqueue(frame, on: current)
                routes.remember(current, owner: owner, peerID: peer.id)
            }
        } else {
            try enqueue(frame, on: connection)
            routes.remember(connection, owner: owner, peerID: peer.id)
        }
    }

    /// The frame of `value` when it is a large `Data` payload (`nil` otherwise), for one peer, built in the memory of
    /// a frame this connection wrote lately when there is one (``OutboundQueue`` keeps a few during a burst): a
    /// megabyte in fresh memory costs more in page faults than in copying.
    func largeDataFrame<T: Encodable>(_ value: T, on connection: PeerConnection) throws -> ByteBuffer? {
        guard T.self == Data.self, let data = value as? Data, data.count > OutboundQueue.coalescedFrameLimit else {
            return nil
        }
        let typeName = MessageTypeName.of(T.self)
        let capacity = data.count + typeName.utf8.count + 32  // the header: length, kind, type name, flags
        var frame =
            connection.takeSpareLargeBuffer(minimumCapacity: capacity)
            ?? connection.allocator.buffer(capacity: capacity)
        try PayloadCoding.writeFrame(typeName: typeName, limit: configuration.maximumMessageSize, into: &frame) {
            buffer in
            buffer.writeBytes(data)
            return .binary
        }
        return frame
    }

    func enqueue(_ frame: ByteBuffer, on connection: PeerConnection) throws {
        let engine = currentEngine
        switch submitFollowingSwitch(frame, on: connection, engine: engine).admission {
        case .accepted: return
        case .full:
            engine?.metrics.outboundLimitHits.increment()
            throw ChirpError.outboundLimitExceeded(peer: connection.peer, limit: configuration.outboundLimit)
        case .closed, .retired: throw ChirpError.peerNotConnected(connection.peer)
        }
    }

    /// Sends `value` to `peer`, waiting while the peer's outbound queue is full instead of throwing.
    ///
    /// A peer that reads slower than we send (its app consumes ``messages(of:)`` slowly, or its handler blocks)
    /// fills its queue up to ``Configuration/outboundLimit``: ``send(_:to:)-(T,Peer)`` then throws
    /// ``ChirpError/Code/outboundLimitExceeded``, and this form waits until the queue is half empty again.
    /// Messages are sent in the order of the calls that returned.
    ///
    /// ```swift
    /// for line in lines { try await transceiver.sendWhenReady(ChatLine(text: line), to: peer) }
    /// ```
    /// - Throws: ``ChirpError/Code/peerNotConnected`` (the connection closed while waiting), an encoding error, or
    ///   `CancellationError` when the task is cancelled while waiting (the message was not sent).
    public func sendWhenReady<T: Encodable>(_ value: T, to peer: Peer) async throws {
        let connection = try connection(to: peer)
        let frame = try largeDataFrame(value, on: connection) ?? messageFrame(value, allocator: connection.allocator)
        guard try await submitWhenReady(frame, on: connection, engine: currentEngine) else {
            throw ChirpError.peerNotConnected(connection.peer)
        }
    }

    /// Sends `value` to every connected peer, waiting for room in each full queue in turn instead of skipping that
    /// peer (see ``sendWhenReady(_:to:)``). Encoded once. A peer that disconnects meanwhile is skipped.
    ///
    /// - Throws: ``ChirpError/Code/notRunning``, an encoding error, or `CancellationError` when the task is cancelled
    ///   while waiting (the peers not reached yet were not sent to).
    public func broadcastWhenReady<T: Encodable>(_ value: T) async throws {
        guard let engine = currentEngine else { throw ChirpError.notRunning }
        let connections = engine.connections
        guard let first = connections.first else { return }
        let frame = try messageFrame(value, allocator: first.allocator)
        for connection in connections {
            _ = try await submitWhenReady(frame, on: connection, engine: engine)  // a peer that left is skipped
        }
    }

    /// Queues `frame` on `connection`, or on the connection that replaced it in a tie-break, waiting while its queue
    /// is full. Returns `false` when the peer is gone (the connection closed, or retired with no successor).
    func submitWhenReady(_ frame: ByteBuffer, on connection: PeerConnection, engine: Engine?) async throws -> Bool {
        var connection = connection
        while true {
            let (admission, tried) = submitFollowingSwitch(frame, on: connection, engine: engine)
            connection = tried
            switch admission {
            case .accepted:
                return true
            case .full:
                await connection.waitForRoom()
                try Task.checkCancellation()
            case .retired, .closed:
                return false
            }
        }
    }

    /// Queues `frame` on `connection`, or, when that one lost a tie-break or closed since the caller picked it, on
    /// the connection that carries the peer now; returns what became of the frame and the connection that decided.
    ///
    /// A sender picks a connection, then queues on it without a lock held in between: meanwhile the connection may
    /// have lost the tie-break, and even closed already (both sides retired it and had nothing in flight). Either way
    /// the peer may still be connected over the winner, and the frame goes there, after everything this thread
    /// queued on the loser (which the receiver delivers first: ``PeerConnection/holdInbound(until:)``). Without this,
    /// a broadcast that took the list of connections just before a switch lost its frame to a peer still connected.
    func submitFollowingSwitch(
        _ frame: ByteBuffer, on connection: PeerConnection, engine: Engine?
    ) -> (admission: PeerConnection.Admission, connection: PeerConnection) {
        var connection = connection
        var admission = connection.submit(frame)
        // Each step follows a newer connection; a few suffice (a peer that reconnects in a loop gets no more).
        var steps = 0
        while admission == .retired || admission == .closed, steps < 4,
            let current = engine?.connection(to: connection.remote.peerID), current !== connection
        {
            connection = current
            admission = current.submit(frame)
            steps += 1
        }
        return (admission, connection)
    }

    /// Sends `value` to each of `peers` (MultipeerKit's `send(_:to:)`), encoding it once.
    /// - Throws: the first error; peers before it were sent to.
    public func send<T: Encodable>(_ value: T, to peers: [Peer]) throws {
        for peer in peers { try send(value, to: peer) }
    }

    /// Sends `request` to `peer` and waits for its responder's reply.
    ///
    /// ```swift
    /// let items = try await transceiver.request(ListItems(), to: peer, as: [Item].self)
    /// ```
    /// - Parameters:
    ///   - request: the request, encoded with the configured coder; its type's responder answers it.
    ///   - peer: a connected peer.
    ///   - responseType: the type of the reply (inferred when the result's type is known).
    ///   - timeout: how long to wait; ``Configuration/requestTimeout`` when `nil`. A timeout past what NIO can count
    ///     (about 292 years, in nanoseconds), such as `.seconds(Int64.max)` for "never", waits that long.
    /// - Throws: ``ChirpError/Code/requestTimedOut``, ``ChirpError/Code/peerDisconnected`` (at once, when
    ///   the connection drops), ``ChirpError/Code/noResponder``, ``ChirpError/Code/remoteFailure``,
    ///   ``ChirpError/Code/decodingFailed``; `CancellationError` at once when the task is cancelled (the request is
    ///   not sent if it was cancelled before; a reply that comes after the cancellation is dropped).
    public func request<Request: Encodable, Response: Decodable>(
        _ request: Request, to peer: Peer, as responseType: Response.Type = Response.self, timeout: Duration? = nil
    ) async throws -> Response {
        let typeName = MessageTypeName.of(Request.self)
        let (response, connection) = try await retryingIfNotSent(peer) { connection in
            let id = connection.makeRequestID()
            // Built in memory this thread reuses (``CodingScratch``): the event loop copies a small frame into its
            // batch, so once the exchange is over the frame's memory can serve the next one.
            var frame = CodingScratch.forThisThread.takeFrameBuffer() ?? connection.allocator.buffer(capacity: 128)
            let coder = self.configuration.coder
            try PayloadCoding.writeFrame(
                requestID: id, typeName: typeName, limit: self.configuration.maximumMessageSize, into: &frame
            ) {
                try PayloadCoding.encode(request, coder: coder, into: &$0)
            }
            defer { CodingScratch.forThisThread.giveBack(frame, ifAtMost: OutboundQueue.coalescedFrameLimit) }
            return try await self.exchange(frame, id: id, typeName: typeName, on: connection, timeout: timeout)
        }
        do {
            return try PayloadCoding.decode(Response.self, from: response, coder: configuration.coder)
        } catch {
            throw ChirpError.decodingFailed(
                type: response.typeName, peer: connection.peer, reason: "\(error)", cause: error)
        }
    }

    /// Sends a request frame and waits for the reply; maps every failure to a ``ChirpError``.
    func exchange(_ frame: ByteBuffer, id: UInt64, typeName: String, on connection: PeerConnection, timeout: Duration?)
        async throws -> MessageBody
    {
        let metrics = currentEngine?.metrics
        let started = ContinuousClock.now
        do {
            let reply = try await exchangeUncounted(frame, id: id, typeName: typeName, on: connection, timeout: timeout)
            metrics?.requestsAnswered.increment()
            metrics?.requestDuration.recordNanoseconds((ContinuousClock.now - started).timeAmount.nanoseconds)
            return reply
        } catch let notSent as FrameNotQueuedError {
            throw notSent  // not sent: retried on the peer's current connection, counted there
        } catch let cancelled as CancellationError {
            throw cancelled  // the requester gave up: neither answered nor failed
        } catch {
            metrics?.requestsFailed.increment()
            throw error
        }
    }

    private func exchangeUncounted(
        _ frame: ByteBuffer, id: UInt64, typeName: String, on connection: PeerConnection, timeout: Duration?
    ) async throws -> MessageBody {
        let wait = timeout ?? configuration.requestTimeout
        let response: ResponseBody
        do {
            response = try await connection.request(id: id, frame: frame, timeout: wait.timeAmount)
        } catch is RequestTimeoutError {
            throw ChirpError.requestTimedOut(type: typeName, peer: connection.peer, seconds: wait.seconds)
        } catch is ConnectionClosedError {
            throw ChirpError.peerDisconnected(connection.peer)
        } catch is OutboundFullError {
            throw ChirpError.outboundLimitExceeded(peer: connection.peer, limit: configuration.outboundLimit)
        } catch is FrameNotQueuedError {
            throw FrameNotQueuedError()  // not sent: the caller tries the peer's current connection
        }
        let payload = response.message.payload
        switch response.status {
        case .ok:
            return response.message
        case .noResponder:
            throw ChirpError.noResponder(type: typeName, peer: connection.peer)
        case .failed, .undecodable:
            let text = payload.getString(at: payload.readerIndex, length: payload.readableBytes) ?? ""
            throw ChirpError.remoteFailure(type: typeName, peer: connection.peer, message: text)
        }
    }

    /// Measures one round trip to `peer` at the protocol level (a ping frame and its pong).
    /// - Parameters:
    ///   - peer: the peer to ping.
    ///   - timeout: how long to wait for the pong (as for ``request(_:to:as:timeout:)``).
    /// - Returns: the round-trip time.
    /// - Throws: ``ChirpError/Code/requestTimedOut``, ``ChirpError/Code/peerDisconnected``; `CancellationError` at
    ///   once when the task is cancelled (a pong that comes after it is dropped).
    public func ping(_ peer: Peer, timeout: Duration = .seconds(5)) async throws -> Duration {
        let clock = ContinuousClock()
        let start = clock.now
        _ = try await retryingIfNotSent(peer) { connection in
            do {
                try await connection.ping(timeout: timeout.timeAmount)
            } catch is RequestTimeoutError {
                throw ChirpError.requestTimedOut(type: "ping", peer: connection.peer, seconds: timeout.seconds)
            } catch let error as FrameNotQueuedError {
                throw error
            } catch let error as CancellationError {
                throw error
            } catch {
                throw ChirpError.peerDisconnected(connection.peer)
            }
        }
        return clock.now - start
    }

    /// Runs `exchange` on the connection to `peer`; when that connection lost the tie-break to another one between
    /// the same two peers, or closed, before anything was sent, runs it again on the peer's current connection. Returns the result and the
    /// connection used.
    func retryingIfNotSent<T>(
        _ peer: Peer, _ exchange: (PeerConnection) async throws -> T
    ) async throws -> (T, PeerConnection) {
        var connection = try connection(to: peer)
        for _ in 0..<3 {
            do {
                return (try await exchange(connection), connection)
            } catch is FrameNotQueuedError {
                let next = try self.connection(to: peer)
                if next === connection { break }
                connection = next
            }
        }
        throw ChirpError.peerNotConnected(peer)
    }

    func connection(to peer: Peer) throws -> PeerConnection {
        guard let engine = currentEngine else { throw ChirpError.notRunning }
        guard let connection = engine.connection(to: peer.id) else { throw ChirpError.peerNotConnected(peer) }
        return connection
    }
}
