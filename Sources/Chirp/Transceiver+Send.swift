import ChirpSupport
import ChirpWire
import Foundation
import NIOCore

extension Transceiver {
    /// Sends `value` to `recipients` without waiting: one peer, some peers, or every app connected (`.all`).
    ///
    /// ```swift
    /// try transceiver.send(line, to: alice)
    /// try transceiver.send(line, to: [alice, bob])
    /// try transceiver.send(line, to: .all)
    /// ```
    ///
    /// The value is encoded once, whatever the number of peers, with the configured coder (a `Data` value travels
    /// as raw bytes; a ``RawMessage`` under its own type name, its payload as it is). Each peer receives what one
    /// thread sends it in the order of the calls, with one exception: a message over 128 KiB travels in parts to a
    /// peer that takes them (Docs/Protocol.md section 3), so that what is sent after it does not wait behind it, and
    /// arrives once it is whole; a message sent after it that arrives whole first is delivered first.
    ///
    /// A peer that reads slower than we send fills its queue up to ``Configuration/outboundLimit``. A named peer whose
    /// queue is full makes this form throw ``/ChirpSupport/ChirpError/Code/outboundLimitExceeded`` (the message was not
    /// sent to it); with `.all`, that peer is skipped and reported as an ``TransceiverEvent/error(_:)`` event. The
    /// waiting form, `try await send(_:to:)` (``send(_:to:)-4elgk``), waits for room instead; in an `async`
    /// function it is the one the compiler picks (top-level code in `main.swift` gets
    /// this one, even written `try await`).
    ///
    /// - Throws: ``/ChirpSupport/ChirpError/Code/notRunning``, ``/ChirpSupport/ChirpError/Code/peerNotConnected``,
    ///   ``/ChirpSupport/ChirpError/Code/outboundLimitExceeded``, ``/ChirpSupport/ChirpError/Code/invalidTypeName``
    ///   (`T`'s wire name cannot travel: nothing is sent), ``/ChirpSupport/ChirpError/Code/encodingFailed`` or
    ///   ``/ChirpSupport/ChirpError/Code/messageTooLarge``. With several peers, the first error: the peers before it
    ///   were sent to.
    public func send<T: Encodable, R: Recipients>(_ value: T, to recipients: R) throws {
        do {
            switch recipients._recipientSet.target {
            case .peer(let peer): try sendNow(value, to: peer)
            case .peers(let peers): try sendNow(value, to: peers)
            case .all: try sendNowToAll(value)
            }
        } catch let error as ChirpError where error.code == .messageTooLarge {
            throw PayloadCoding.explained(error, for: value)
        }
    }

    /// Sends `value` to `recipients`, waiting while a peer's outbound queue is full instead of throwing.
    ///
    /// ```swift
    /// for line in lines { try await transceiver.send(ChatLine(text: line), to: peer) }
    /// try await transceiver.send(ChatLine(text: "bye"), to: .all)
    /// ```
    ///
    /// A peer that reads slower than we send (its app consumes ``messages(of:)`` slowly, or its handler blocks)
    /// fills its queue up to ``Configuration/outboundLimit``: this form then waits until the queue is half empty
    /// again, for each full queue in turn (the peers not reached yet wait too). Messages are sent in the order of
    /// the calls that returned. With `.all`, a peer that disconnects meanwhile is skipped. Otherwise as
    /// ``send(_:to:)-1sz75``, which never waits.
    ///
    /// - Throws: what ``send(_:to:)-1sz75`` throws but ``/ChirpSupport/ChirpError/Code/outboundLimitExceeded``;
    ///   ``/ChirpSupport/ChirpError/Code/peerNotConnected`` when a named peer's connection closed while waiting;
    ///   `CancellationError` when the task is cancelled while waiting (the message was not sent to the peers not
    ///   reached yet).
    public func send<T: Encodable, R: Recipients>(_ value: T, to recipients: R) async throws {
        do {
            switch recipients._recipientSet.target {
            case .peer(let peer): try await sendWaiting(value, to: peer)
            case .peers(let peers): try await sendWaiting(value, to: peers)
            case .all: try await sendWaitingToAll(value)
            }
        } catch let error as ChirpError where error.code == .messageTooLarge {
            throw PayloadCoding.explained(error, for: value)
        }
    }

    // MARK: - One peer

    /// What became of a frame queued for a named peer that is still connected.
    enum Submitted {
        case accepted
        /// Not queued: this connection's queue is full.
        case full(PeerConnection)
    }

    /// Sends `value` to one peer, or throws.
    private func sendNow<T: Encodable>(_ value: T, to peer: Peer) throws {
        if case .full(let connection) = try submitOnce(value, to: peer, failsWhenFull: true).outcome {
            throw outboundLimitExceeded(connection)
        }
    }

    /// Sends `value` to one peer, waiting for room in its queue.
    private func sendWaiting<T: Encodable>(_ value: T, to peer: Peer) async throws {
        let (outcome, frame) = try submitOnce(value, to: peer)
        guard case .full(let connection) = outcome, let frame else { return }
        guard try await submitWhenReady(frame, on: connection, engine: currentEngine) else {
            throw ChirpError.peerNotConnected(connection.peer)
        }
    }

    /// Queues `value` for `peer` once; says whether the queue was full (and which), with the frame then, for a
    /// caller that waits for room and queues it again. `failsWhenFull`: the caller does not wait; a large `Data`
    /// payload is then not copied into a frame when the queue is full already.
    private func submitOnce<T: Encodable>(
        _ value: T, to peer: Peer, failsWhenFull: Bool = false
    ) throws -> (outcome: Submitted, frame: ByteBuffer?) {
        // The connection this thread sent on last, when it was to this peer: no lock to find it. One that closed or
        // lost a tie-break since refuses the frame, and the peer is looked up again.
        let routes = RouteCache.forThisThread
        let remembered = routes.route(owner: ObjectIdentifier(self), peerID: peer.id)
        let connection = try remembered ?? self.connection(to: peer)
        // A large payload for a sender that will not wait: a full queue is said before the payload is copied into a
        // frame (with parts, a megabyte-sized send loop meets a full queue often; each refusal cost a copy).
        if failsWhenFull, T.self == Data.self, let data = value as? Data,
            data.count > OutboundQueue.coalescedFrameLimit, data.count < configuration.maximumMessageSize,
            connection.outbound.isFull(for: data.count)
        {
            return (.full(connection), nil)
        }
        if T.self == Data.self, let frame = try largeDataFrame(value, on: connection) {
            let outcome = try submit(frame, on: connection, remembered: remembered != nil, routes: routes, peer: peer)
            return (outcome, frame)
        }
        return try withMessageFrame(value, allocator: connection.allocator) { frame in
            let outcome = try submit(frame, on: connection, remembered: remembered != nil, routes: routes, peer: peer)
            guard case .full = outcome else { return (outcome, nil) }
            return (outcome, frame)  // this thread's scratch memory: copied on write when the thread reuses it
        }
    }

    /// Queues a frame for one peer on `connection`; remembers the connection for this thread's next send, or, when a
    /// remembered one refused the frame, looks the peer up again. Throws when the peer is not connected.
    private func submit(
        _ frame: ByteBuffer, on connection: PeerConnection, remembered: Bool, routes: RouteCache, peer: Peer
    ) throws -> Submitted {
        let owner = ObjectIdentifier(self)
        if remembered {
            switch connection.submit(frame) {
            case .accepted:
                return .accepted
            case .full:
                return .full(connection)
            case .closed, .retired:
                routes.forgetRoute()
                let current = try self.connection(to: peer)
                let outcome = try submitFollowingSwitch(frame, to: current)
                if case .accepted = outcome { routes.remember(current, owner: owner, peerID: peer.id) }
                return outcome
            }
        }
        let outcome = try submitFollowingSwitch(frame, to: connection)
        if case .accepted = outcome { routes.remember(connection, owner: owner, peerID: peer.id) }
        return outcome
    }

    /// Queues `frame` on `connection` or the connection that replaced it; throws when the peer is gone.
    private func submitFollowingSwitch(_ frame: ByteBuffer, to connection: PeerConnection) throws -> Submitted {
        let (admission, tried) = submitFollowingSwitch(frame, on: connection, engine: currentEngine)
        switch admission {
        case .accepted: return .accepted
        case .full: return .full(tried)
        case .closed, .retired: throw ChirpError.peerNotConnected(tried.peer)
        }
    }

    /// The error of a send that found `connection`'s queue full (counted in the metrics).
    private func outboundLimitExceeded(_ connection: PeerConnection) -> ChirpError {
        currentEngine?.metrics.outboundLimitHits.increment()
        return ChirpError.outboundLimitExceeded(peer: connection.peer, limit: configuration.outboundLimit)
    }

    /// The frame of `value` when it is a large `Data` payload (`nil` otherwise), for one peer, built in the memory of
    /// a frame this connection wrote lately when there is one (``OutboundQueue`` keeps a few during a burst): a
    /// megabyte in fresh memory costs more in page faults than in copying.
    @inline(never)
    private func largeDataFrame<T: Encodable>(_ value: T, on connection: PeerConnection) throws -> ByteBuffer? {
        guard let data = value as? Data, data.count > OutboundQueue.coalescedFrameLimit else { return nil }
        let typeName = MessageTypeName.data
        let capacity = data.count + typeName.utf8.count + 32  // the header: length, kind, type name, flags
        var frame =
            connection.outbound.takeSpareLarge(minimumCapacity: capacity)
            ?? connection.allocator.buffer(capacity: capacity)
        try PayloadCoding.writeFrame(typeName: typeName, limit: configuration.maximumMessageSize, into: &frame) {
            buffer in
            buffer.writeBytes(data)
            return .binary
        }
        return frame
    }

    // MARK: - Several peers

    /// Sends `value` to each of `peers`, encoded once; throws the first error.
    private func sendNow<T: Encodable>(_ value: T, to peers: [Peer]) throws {
        guard let first = peers.first else { return }
        let firstConnection = try connection(to: first)
        try withMessageFrame(value, allocator: firstConnection.allocator) { frame in
            for peer in peers {
                let connection = peer == first ? firstConnection : try self.connection(to: peer)
                if case .full(let full) = try submitFollowingSwitch(frame, to: connection) {
                    throw outboundLimitExceeded(full)
                }
            }
        }
    }

    /// Sends `value` to each of `peers`, encoded once, waiting for room in each full queue in turn.
    private func sendWaiting<T: Encodable>(_ value: T, to peers: [Peer]) async throws {
        guard let first = peers.first else { return }
        let frame = try messageFrame(value, allocator: try connection(to: first).allocator)
        for peer in peers {
            guard try await submitWhenReady(frame, on: try connection(to: peer), engine: currentEngine) else {
                throw ChirpError.peerNotConnected(peer)
            }
        }
    }

    // MARK: - Every app

    /// Sends `value` to every app connected; a full queue's peer is skipped and reported.
    private func sendNowToAll<T: Encodable>(_ value: T) throws {
        guard let engine = currentEngine else { throw ChirpError.notRunning }
        let connections = engine.connections
        guard let first = connections.first else { return }
        try withMessageFrame(value, allocator: first.allocator) { frame in
            enqueue(frame, on: connections, engine: engine)
        }
    }

    /// Sends `value` to every app connected, waiting for room in each full queue in turn; a peer that left is
    /// skipped.
    private func sendWaitingToAll<T: Encodable>(_ value: T) async throws {
        guard let engine = currentEngine else { throw ChirpError.notRunning }
        let connections = engine.connections
        guard let first = connections.first else { return }
        let frame = try messageFrame(value, allocator: first.allocator)
        for connection in connections {
            _ = try await submitWhenReady(frame, on: connection, engine: engine)  // a peer that left is skipped
        }
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

    // MARK: - Frames

    /// Runs `body` with the message frame of `value`, built in memory this thread reuses (``CodingScratch``): the
    /// connections copy a small frame into their batch, so the next message is built in the same memory.
    func withMessageFrame<T: Encodable, R>(
        _ value: T, allocator: ByteBufferAllocator, scratch: CodingScratch = .forThisThread,
        _ body: (ByteBuffer) throws -> R
    ) throws -> R {
        if T.self == RawMessage.self { return try body(rawFrame(value, allocator: allocator)) }
        var frame = scratch.takeFrameBuffer() ?? allocator.buffer(capacity: 128)
        let coder = configuration.coder
        try PayloadCoding.writeFrame(
            typeName: try MessageTypeName.of(T.self), limit: configuration.maximumMessageSize, into: &frame
        ) {
            try PayloadCoding.encode(value, coder: coder, into: &$0)
        }
        let result = try body(frame)
        scratch.giveBack(frame, ifAtMost: OutboundQueue.coalescedFrameLimit)
        return result
    }

    /// The frame of a ``RawMessage``: its type name and payload as they are.
    @inline(never)
    private func rawFrame<T>(_ value: T, allocator: ByteBufferAllocator) throws -> ByteBuffer {
        guard let raw = value as? RawMessage else { preconditionFailure("rawFrame(_:) of a \(T.self)") }
        return try PayloadCoding.frame(raw, allocator: allocator, limit: configuration.maximumMessageSize)
    }

    /// The message frame of `value`, in memory of its own (for a send that may wait).
    func messageFrame<T: Encodable>(_ value: T, allocator: ByteBufferAllocator) throws -> ByteBuffer {
        if T.self == RawMessage.self { return try rawFrame(value, allocator: allocator) }
        return try PayloadCoding.frame(
            value, typeName: try MessageTypeName.of(T.self), coder: configuration.coder, allocator: allocator,
            limit: configuration.maximumMessageSize)
    }

    // MARK: - Queueing

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

    /// The connection in use to `peer`.
    func connection(to peer: Peer) throws -> PeerConnection {
        guard let engine = currentEngine else { throw ChirpError.notRunning }
        guard let connection = engine.connection(to: peer.id) else { throw ChirpError.peerNotConnected(peer) }
        return connection
    }
}
