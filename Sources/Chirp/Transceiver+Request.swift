import ChirpSupport
import ChirpWire
import NIOCore

extension Transceiver {
    // MARK: - Answering

    /// Answers requests of type `Request` with a `Response`; the reply goes to the requester only.
    ///
    /// ```swift
    /// try transceiver.respond(to: Echo.self) { request, sender in
    ///     Echo(text: request.text.uppercased())
    /// }
    /// ```
    ///
    /// One responder per request type; a new one replaces the previous. It runs on the connection's event loop, its
    /// reply encoded straight into the response frame, so keep it short or use the `async` overload. A thrown error
    /// reaches the requester as ``/ChirpSupport/ChirpError/Code/remoteFailure`` with the error's description.
    ///
    /// - Throws: ``/ChirpSupport/ChirpError/Code/invalidTypeName`` when the wire name of `Request` or of `Response`
    ///   cannot travel (empty, or over 1,024 bytes); ``/ChirpSupport/ChirpError/Code/typeNameConflict`` when another
    ///   Swift type has a handler or a responder under `Request`'s name.
    public func respond<Request: Decodable & Sendable, Response: Encodable & Sendable>(
        to type: Request.Type, with handler: @escaping @Sendable (_ request: Request, _ sender: Peer) throws -> Response
    ) throws {
        let typeName = try MessageTypeName.of(type)
        let responseName = try MessageTypeName.of(Response.self)
        try router.setResponder(
            for: typeName, type: Request.self,
            .sync(replyTypeName: responseName) { message, peer, coder, frame in
                let request = try Self.decodeRequest(
                    Request.self, typeName: typeName, message: message, peer: peer, coder: coder)
                return try PayloadCoding.encode(try handler(request, peer), coder: coder, into: &frame)
            })
    }

    /// Answers requests of type `Request` with a `Response` computed asynchronously; the reply goes to the requester
    /// only.
    ///
    /// ```swift
    /// try transceiver.respond(to: ListItems.self) { request, sender in
    ///     await store.items()
    /// }
    /// ```
    ///
    /// Each request runs in a task of its own, at most ``Configuration/maximumConcurrentResponders`` at once; the
    /// others wait, and the connection they came on is not read meanwhile.
    ///
    /// - Throws: what the synchronous ``respond(to:with:)-4y9jz`` throws.
    public func respond<Request: Decodable & Sendable, Response: Encodable & Sendable>(
        to type: Request.Type,
        with handler: @escaping @Sendable (_ request: Request, _ sender: Peer) async throws -> Response
    ) throws {
        let typeName = try MessageTypeName.of(type)
        let responseName = try MessageTypeName.of(Response.self)
        try router.setResponder(
            for: typeName, type: Request.self,
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

    // MARK: - Asking

    /// Sends `request` to `peer` and waits for its responder's reply.
    ///
    /// ```swift
    /// let items = try await transceiver.request(ListItems(), to: peer, as: [Item].self)
    /// ```
    ///
    /// With a ``RawMessage`` as `request`, it travels under its own type name, its payload as it is; with
    /// `as: RawMessage.self`, the reply is returned as it came, whatever its type.
    ///
    /// When the connection to `peer` closes before the reply, the request is sent again, once, on the peer's next
    /// connection (waiting for it within what is left of `timeout`) if the peer cannot have run it (it was still
    /// queued, never handed to the socket) or if its type conforms to ``IdempotentRequest``. It is not when the peer
    /// said it was stopping, or is gone.
    ///
    /// - Parameters:
    ///   - request: the request, encoded with the configured coder; its type's responder answers it.
    ///   - peer: a connected peer.
    ///   - responseType: the type of the reply (inferred when the result's type is known).
    ///   - timeout: how long to wait; ``Configuration/requestTimeout`` when `nil`. A timeout past what NIO can count
    ///     (about 292 years, in nanoseconds), such as `.seconds(Int64.max)` for "never", waits that long.
    /// - Throws: ``/ChirpSupport/ChirpError/Code/requestTimedOut``, ``/ChirpSupport/ChirpError/Code/peerDisconnected``
    ///   (when the connection drops and the request is not sent again, or is lost again; its
    ///   ``/ChirpSupport/ChirpError/reason`` says whether the peer may have run it),
    ///   ``/ChirpSupport/ChirpError/Code/noResponder``,
    ///   ``/ChirpSupport/ChirpError/Code/remoteFailure``, ``/ChirpSupport/ChirpError/Code/decodingFailed``, or what
    ///   ``send(_:to:)-1sz75`` throws before sending; `CancellationError` at once when the task is cancelled (the
    ///   request is not sent if it was cancelled before; a reply that comes after the cancellation is dropped).
    public func request<Request: Encodable, Response: Decodable>(
        _ request: Request, to peer: Peer, as responseType: Response.Type = Response.self, timeout: Duration? = nil
    ) async throws -> Response {
        if Request.self == RawMessage.self || Response.self == RawMessage.self {
            return try await rawRequest(request, to: peer, as: responseType, timeout: timeout)
        }
        let typeName = try MessageTypeName.of(Request.self)
        let (response, connection) = try await retryingIfLost(
            peer, typeName: typeName, isIdempotent: request is any IdempotentRequest, timeout: timeout
        ) { connection, wait in
            let id = connection.makeRequestID()
            // Built in memory this thread reuses (``CodingScratch``): the event loop copies a small frame into its
            // batch, so once the exchange is over the frame's memory can serve the next one.
            var frame = CodingScratch.forThisThread.takeFrameBuffer() ?? connection.allocator.buffer(capacity: 128)
            let coder = self.configuration.coder
            do {
                try PayloadCoding.writeFrame(
                    requestID: id, typeName: typeName, limit: self.configuration.maximumMessageSize, into: &frame
                ) {
                    try PayloadCoding.encode(request, coder: coder, into: &$0)
                }
            } catch let error as ChirpError where error.code == .messageTooLarge {
                throw PayloadCoding.explained(error, for: request)
            }
            defer { CodingScratch.forThisThread.giveBack(frame, ifAtMost: OutboundQueue.coalescedFrameLimit) }
            return try await self.exchange(frame, id: id, typeName: typeName, on: connection, timeout: wait)
        }
        do {
            return try PayloadCoding.decode(Response.self, from: response, coder: configuration.coder)
        } catch {
            throw Self.replyDecodingFailed(
                response, expected: Response.self, request: typeName, peer: connection.peer, error)
        }
    }

    /// ``request(_:to:as:timeout:)`` when the request or the reply is a ``RawMessage``: a raw request travels under
    /// its own type name, a raw reply is returned as it came.
    @inline(never)
    private func rawRequest<Request: Encodable, Response: Decodable>(
        _ request: Request, to peer: Peer, as responseType: Response.Type, timeout: Duration?
    ) async throws -> Response {
        let raw = request as? RawMessage
        let typeName = try raw?.typeName ?? MessageTypeName.of(Request.self)
        let coder = configuration.coder
        let limit = configuration.maximumMessageSize
        let (response, connection) = try await retryingIfLost(
            peer, typeName: typeName, isIdempotent: request is any IdempotentRequest, timeout: timeout
        ) { connection, wait in
            let id = connection.makeRequestID()
            let frame: ByteBuffer
            if let raw {
                frame = try PayloadCoding.frame(raw, requestID: id, allocator: connection.allocator, limit: limit)
            } else {
                frame = try PayloadCoding.frame(
                    request, requestID: id, typeName: typeName, coder: coder, allocator: connection.allocator,
                    limit: limit)
            }
            return try await self.exchange(frame, id: id, typeName: typeName, on: connection, timeout: wait)
        }
        if let reply = RawMessage(response) as? Response { return reply }
        do {
            return try PayloadCoding.decode(Response.self, from: response, coder: coder)
        } catch {
            throw Self.replyDecodingFailed(
                response, expected: Response.self, request: typeName, peer: connection.peer, error)
        }
    }

    /// The error of a reply that does not decode as `expected`, naming the type expected and the type received.
    private static func replyDecodingFailed<Response>(
        _ reply: MessageBody, expected: Response.Type, request: String, peer: Peer, _ error: any Error
    ) -> ChirpError {
        let swiftName = String(reflecting: Response.self)
        let wireName = (try? MessageTypeName.of(Response.self)) ?? swiftName
        return ChirpError.replyDecodingFailed(
            request: request, expected: wireName == swiftName ? swiftName : "\(swiftName) ('\(wireName)')",
            received: reply.typeName, peer: peer, reason: "\(error)", cause: error)
    }

    /// Sends a request frame and waits for the reply; maps every failure to a ``ChirpError``, but for a close before
    /// the reply (``RequestConnectionLost``, which ``retryingIfLost(_:typeName:isIdempotent:timeout:_:)`` decides on).
    func exchange(_ frame: ByteBuffer, id: UInt64, typeName: String, on connection: PeerConnection, timeout: Duration)
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
        } catch let lost as RequestConnectionLost {
            throw lost  // sent again on the peer's next connection, or counted as failed where that is decided
        } catch let cancelled as CancellationError {
            throw cancelled  // the requester gave up: neither answered nor failed
        } catch {
            metrics?.requestsFailed.increment()
            throw error
        }
    }

    private func exchangeUncounted(
        _ frame: ByteBuffer, id: UInt64, typeName: String, on connection: PeerConnection, timeout wait: Duration
    ) async throws -> MessageBody {
        let response: ResponseBody
        do {
            response = try await connection.request(id: id, frame: frame, timeout: wait.timeAmount)
        } catch is RequestTimeoutError {
            throw ChirpError.requestTimedOut(type: typeName, peer: connection.peer, seconds: wait.seconds)
        } catch let closed as ConnectionClosedError {
            throw RequestConnectionLost(peer: connection.peer, connection: ObjectIdentifier(connection), closed: closed)
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
    ///
    /// ```swift
    /// let rtt = try await transceiver.ping(peer)
    /// print("\(peer.name): \(rtt)")
    /// ```
    /// - Parameters:
    ///   - peer: the peer to ping.
    ///   - timeout: how long to wait for the pong (as for ``request(_:to:as:timeout:)``).
    /// - Returns: the round-trip time.
    /// - Throws: ``/ChirpSupport/ChirpError/Code/requestTimedOut``, ``/ChirpSupport/ChirpError/Code/peerDisconnected``,
    ///   ``/ChirpSupport/ChirpError/Code/peerNotConnected``, ``/ChirpSupport/ChirpError/Code/notRunning``;
    ///   `CancellationError` at once when the task is cancelled (a pong that comes after it is dropped).
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

    /// Runs `exchange` (a request of `typeName`) on the connection to `peer`, with the time left of `timeout`
    /// (``Configuration/requestTimeout`` when `nil`); when the connection closes before the reply, decides with a
    /// ``RequestAttempts`` whether to run it again, once, on the peer's next connection (waiting for it until the
    /// timeout), or to fail with ``/ChirpSupport/ChirpError/Code/peerDisconnected`` and a reason that says what became
    /// of the request. `isIdempotent` is asked only then (a conformance check costs a runtime lookup). Returns the
    /// result and the connection used.
    func retryingIfLost<T>(
        _ peer: Peer, typeName: String, isIdempotent: @autoclosure () -> Bool, timeout: Duration?,
        _ exchange: (PeerConnection, Duration) async throws -> T
    ) async throws -> (T, PeerConnection) {
        var attempts: RequestAttempts?
        let total = timeout ?? configuration.requestTimeout
        let deadline = ContinuousClock.now + total
        var wait = total
        var next: PeerConnection?
        while true {
            do {
                return try await retryingIfNotSent(peer, first: next) { try await exchange($0, wait) }
            } catch let lost as RequestConnectionLost {
                var decided = attempts ?? RequestAttempts(typeName: typeName, isIdempotent: isIdempotent())
                defer { attempts = decided }
                let failure: String
                switch decided.connectionClosed(lost.closed.delivery, peerStopping: lost.closed.peerStopping) {
                case .retry:
                    switch await nextConnection(to: lost.peer.id, after: lost.connection, until: deadline) {
                    case .connected(let connection):
                        try Task.checkCancellation()
                        next = connection
                        wait = max(deadline - .now, .nanoseconds(1))
                        continue
                    case .missed(let missed):
                        try Task.checkCancellation()
                        failure = decided.reconnectionMissed(missed)
                    }
                case .fail(let reason):
                    failure = reason
                }
                currentEngine?.metrics.requestsFailed.increment()
                throw ChirpError.peerDisconnected(lost.peer, type: typeName, reason: failure)
            }
        }
    }

    /// Runs `exchange` on the connection to `peer` (or on `first`); when that connection lost the tie-break to
    /// another one between the same two peers, or closed, before anything was sent, runs it again on the peer's
    /// current connection. Returns the result and the connection used.
    func retryingIfNotSent<T>(
        _ peer: Peer, first: PeerConnection? = nil, _ exchange: (PeerConnection) async throws -> T
    ) async throws -> (T, PeerConnection) {
        var connection = try first ?? self.connection(to: peer)
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
}

/// The connection closed before the reply to a request (``ConnectionClosedError``), on its way to
/// ``Transceiver/retryingIfLost(_:typeName:isIdempotent:timeout:_:)``.
struct RequestConnectionLost: Error {
    /// The peer, as seen over the connection.
    let peer: Peer
    /// The connection that closed: the request is sent again only on another one.
    let connection: ObjectIdentifier
    /// How far the request got, and whether the peer said it was stopping.
    let closed: ConnectionClosedError
}
