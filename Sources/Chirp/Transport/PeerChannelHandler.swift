import ChirpWire
import Logging
import NIOCore

/// The last handler of every connection, and the owner of its state: turns frames into calls on the
/// ``ConnectionDelegate`` (the peer table) and the ``MessageDispatcher`` (messages and requests), writes what the
/// connection's queue holds, keeps the heartbeat (a ping when we have been quiet, a close when the peer has), and
/// holds the connection's lifecycle (``ConnectionLifecycle``) and the requests and pings in flight
/// (``PendingExchanges``).
///
/// All of it is touched on the channel's event loop only. Other threads reach it through ``PeerConnection``, which
/// hands it work once (`eventLoop.execute`).
final class PeerChannelHandler: ChannelInboundHandler {
    typealias InboundIn = Frame
    typealias OutboundOut = ByteBuffer
    // `@exclusivity(unchecked)` on the stored properties touched for every frame: the handler lives on one event
    // loop, and no access to them overlaps another (each is a plain read or an in-place change that ends before any
    // other code runs). The runtime's dynamic check of each access had cost about a tenth of a small message's
    // receive (as it had for the JSON coders, FastJSONEncoder).

    private let delegate: any ConnectionDelegate
    private let dispatcher: MessageDispatcher
    private let role: ConnectionRole
    private let localID: String
    private let outboundLimit: Int
    /// ``Configuration/burstLinger``.
    private let burstLinger: TimeAmount
    /// A drain is scheduled after the burst linger (``LingerEnd``).
    @exclusivity(unchecked) private var lingering = false
    /// The peer id we meant to reach, for dialed connections.
    private let dialedPeerID: String?
    private let host: String?
    private let logger: Logger
    /// When this channel was initialized: the connection opened then, before its handshake.
    private let openedAt: ContinuousClock.Instant
    private let heartbeatTimeout: Double
    /// Closed while a consumer of this connection's messages is full; the heartbeat does not count that time.
    private let readGate: ReadGate?
    @exclusivity(unchecked) private var connection: PeerConnection?
    @exclusivity(unchecked) private var context: ChannelHandlerContext?
    private var lifecycle = ConnectionLifecycle()
    /// Requests we sent on this connection, waiting for their response.
    private var requests = PendingExchanges<ExchangeWaiter<ResponseBody>>()
    /// Pings we sent (``PeerConnection/ping(timeout:)``), waiting for their pong.
    private var pings = PendingExchanges<ExchangeWaiter<Void>>()
    /// The one timer of the requests and pings in flight (``ExpiryCheck``), and when it fires: no later than the
    /// earliest of their deadlines.
    private var expiryCheck: (deadline: NIODeadline, callback: NIOScheduledCallback)?
    /// Set once the peer can send nothing more here: its `goodbye(duplicate)` arrived or the channel closed.
    private var inboundFinished = false
    private var inboundFinishedCallbacks: [@Sendable () -> Void] = []
    /// Why what the peer sends here waits, if it does: until the events of the handshake reached the app, until its
    /// other connection delivered first (``PeerConnection/holdInbound(until:)``), or both.
    @exclusivity(unchecked) private var inboundHolds: InboundHolds = []
    /// Whether what we queue waits before it is written: the connection won a tie-break that moved our messages to it
    /// from the one that lost (``PeerConnection/holdOutbound(until:)``).
    @exclusivity(unchecked) private var holdsOutbound = false
    /// The last pong written, whose memory the next one reuses.
    @exclusivity(unchecked) private var sparePong: ByteBuffer?
    /// Frames and bytes read since the last read completed, counted into the metrics once per read.
    @exclusivity(unchecked) private var framesRead = 0
    @exclusivity(unchecked) private var bytesRead = 0
    private var handshakeError: (any Error)?
    private var remoteDescription = "unknown"
    /// Completed once the handshake is done (or failed if the channel closes before).
    private let established: EventLoopPromise<PeerConnection>?
    /// Frames held while the connection waits for another one with the same peer (``PeerConnection/holdInbound(until:)``).
    @exclusivity(unchecked) private var held = CircularBuffer<Frame>()
    /// Frames read and not handled yet: what one read brought in, while the handlers of earlier frames run
    /// (``deliverInbox(context:)``).
    @exclusivity(unchecked) private var inbox = CircularBuffer<Frame>()
    /// ``deliverInbox(context:)`` runs, or its continuation is scheduled.
    @exclusivity(unchecked) private var delivering = false
    /// Frames were queued on the event loop while delivering: written when this batch of handlers is done.
    @exclusivity(unchecked) private var drainAfterDelivery = false
    /// When handlers started running in this turn of the event loop (a read, or a continuation), and how many ran.
    @exclusivity(unchecked) private var turnStart: NIODeadline?
    @exclusivity(unchecked) private var handledThisTurn = 0
    @exclusivity(unchecked) private var heldBytes = 0
    /// The type names this connection received lately, matched on their bytes: no string is made for them again.
    @exclusivity(unchecked) private var typeNames = TypeNameCache()
    /// Past this many held bytes the hold ends early: the connection is never starved of reads, since the
    /// heartbeat would close it, at the price of the order across the switch.
    static let maximumHeldBytes = 8 << 20

    init(
        delegate: any ConnectionDelegate, dispatcher: MessageDispatcher, role: ConnectionRole, localID: String,
        dialedPeerID: String?, host: String?,
        outboundLimit: Int, burstLinger: TimeAmount, heartbeatTimeout: Double, logger: Logger,
        established: EventLoopPromise<PeerConnection>? = nil,
        readGate: ReadGate? = nil
    ) {
        self.established = established
        self.readGate = readGate
        self.delegate = delegate
        self.dispatcher = dispatcher
        self.role = role
        self.localID = localID
        self.dialedPeerID = dialedPeerID
        self.host = host
        self.outboundLimit = outboundLimit
        self.burstLinger = burstLinger
        self.heartbeatTimeout = heartbeatTimeout
        self.logger = logger
        self.openedAt = ContinuousClock.now
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        remoteDescription = context.remoteAddress.map(Self.text(of:)) ?? "unknown"
        context.fireChannelActive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let completed = event as? HandshakeCompleted {
            let addresses = context.remoteAddress.map { [Self.text(of: $0)] } ?? []
            let connection = PeerConnection(
                handler: self, channel: context.channel, role: role, remote: completed.remote, localID: localID,
                addresses: addresses, host: host, outboundLimit: outboundLimit, openedAt: openedAt,
                readGate: readGate.map { LoopBoundGate($0, eventLoop: context.eventLoop) })
            self.connection = connection
            // What the peer sends waits until the app was told it connected: `peerConnected` comes first.
            inboundHolds.insert(.untilConnectedEvent)
            delegate.connectionEstablished(connection)
            let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
            let eventLoop = context.eventLoop
            delegate.afterEventsDelivered {
                eventLoop.execute { loopBound.value.releaseHold(.untilConnectedEvent) }
            }
            established?.succeed(connection)
            return
        }
        if let heartbeat = event as? HeartbeatHandler.Event {
            switch heartbeat {
            case .quiet:
                // Quiet for a heartbeat interval: say we are alive. Never before the handshake.
                if connection != nil {
                    context.writeAndFlush(
                        wrapOutboundOut(
                            FrameWriter.frame(.ping, body: ByteBuffer(), allocator: context.channel.allocator)),
                        promise: nil)
                }
            case .silent:
                // Before the handshake, the handshake timeout (HandshakeHandler) decides alone: a hello that is still
                // arriving, or that has not started, gets the whole of it (Protocol.md section 4).
                guard let connection else { return }
                if readGate?.isClosed == true {
                    // We stopped reading on purpose (a consumer of this peer's messages is full): its silence is ours.
                    return
                }
                let receivedLately = Self.kernelReceivedData(on: context.channel, within: heartbeatTimeout)
                receivedLately.assumeIsolated().whenSuccess { receivedLately in
                    if receivedLately {
                        self.logger.debug(
                            "no frame for the heartbeat timeout, but data from the peer arrived lately; keeping the connection",
                            metadata: ["peer": "\(connection.peer)"])
                        return
                    }
                    self.logger.notice(
                        "closing connection: nothing received for \(self.heartbeatTimeout) s",
                        metadata: ["peer": "\(connection.peer)"])
                    context.close(promise: nil)
                }
            }
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let connection else { return }  // nothing passes the handshake handler before the handshake
        let frame = unwrapInboundIn(data)
        framesRead += 1
        bytesRead += frame.body.readableBytes + 5  // the length prefix and the kind byte
        if !inboundHolds.isEmpty, frame.knownKind != .ping, frame.knownKind != .pong {
            held.append(frame)
            heldBytes += frame.body.readableBytes
            if heldBytes > Self.maximumHeldBytes {
                logger.notice(
                    "delivering before the peer's other connection is done: too much waits",
                    metadata: [
                        "peer": "\(connection.peer)", "bytes": "\(heldBytes)"
                    ])
                releaseHold(inboundHolds)
            }
            return
        }
        inbox.append(frame)
        if !delivering { deliverInbox(context: context) }
    }

    /// Runs the handlers of what arrived, in order, for at most ``deliveryBudget`` per turn of the event loop.
    ///
    /// A synchronous handler that takes its time (a millisecond per message, say, as an app that writes each one to
    /// a slow pipe) would otherwise hold the event loop for as long as the frames of a read take: seconds, during
    /// which this side sends no heartbeat, and the peer closes the connection with everything it had queued. Past the
    /// budget, the rest is handled in a task of its own, so that timers (the heartbeat's ping) run in between, and the
    /// connection is not read meanwhile (its read gate is closed): TCP slows the sender instead of this side
    /// buffering. The check reads the clock once every 16 frames.
    private func deliverInbox(context: ChannelHandlerContext) {
        guard let connection else { return }
        delivering = true
        let start = turnStart ?? NIODeadline.now()
        turnStart = start
        while let frame = inbox.popFirst() {
            handle(frame, on: connection, context: context)
            handledThisTurn += 1
            if handledThisTurn % 16 == 0, NIODeadline.now() - start > Self.deliveryBudget {
                // The budget of this turn is spent: the rest, and what this read still brings in, in a task of its
                // own; reading waits until it is done. What the handlers queued goes out now.
                readGate?.close(for: ObjectIdentifier(self))
                if drainAfterDelivery {
                    drainAfterDelivery = false
                    drain()
                }
                let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
                context.eventLoop.execute {
                    let (handler, context) = loopBound.value
                    handler.startTurn()
                    handler.deliverInbox(context: context)
                }
                return
            }
        }
        delivering = false
        if drainAfterDelivery {
            drainAfterDelivery = false
            drain()
        }
        readGate?.open(for: ObjectIdentifier(self))
    }

    /// A new turn of the event loop: the handlers get a new budget.
    private func startTurn() {
        turnStart = nil
        handledThisTurn = 0
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if framesRead > 0 {
            dispatcher.metrics.framesIn.increment(by: Int64(framesRead))
            dispatcher.metrics.bytesIn.increment(by: Int64(bytesRead))
            (framesRead, bytesRead) = (0, 0)
        }
        if !delivering { startTurn() }
        context.fireChannelReadComplete()
    }

    /// How long handlers may run in one turn of the event loop before the rest waits for the next turn.
    static let deliveryBudget: TimeAmount = .milliseconds(50)

    // MARK: - The connection's state (on the event loop, called through PeerConnection)

    /// Writes everything queued while the channel is writable, then flushes once.
    func drain() {
        guard let connection else { return }
        guard let context, !holdsOutbound else {
            // Ends the scheduled drain: nothing can be written (yet). What is queued stays queued.
            _ = connection.nextChunk(isWritable: false)
            return
        }
        var wrote = false
        var lastWritten: ByteBuffer?
        var bytes = 0
        while let chunk = connection.nextChunk(isWritable: context.channel.isWritable) {
            bytes += chunk.readableBytes
            if chunk.capacity > 4 * OutboundQueue.coalescedWriteSize {
                // A large frame: once written, its memory may serve the next one (OutboundQueue.recycleLarge).
                let promise = context.eventLoop.makePromise(of: Void.self)
                promise.futureResult.whenSuccess { connection.recycleLarge(chunk) }
                context.write(wrapOutboundOut(chunk), promise: promise)
            } else {
                context.write(wrapOutboundOut(chunk), promise: nil)
            }
            wrote = true
            lastWritten = chunk
        }
        if wrote { context.flush() }
        // After the flush, which usually hands the bytes to the kernel: NIO has let go of them by then, and the next
        // batch reuses their memory.
        let (frames, lingers) = connection.drained(
            recycling: lastWritten, mayLinger: burstLinger > .zero && !lingering)
        if frames > 0 { dispatcher.metrics.framesOut.increment(by: Int64(frames)) }
        if bytes > 0 { dispatcher.metrics.bytesOut.increment(by: Int64(bytes)) }
        if lingers { lingerThenDrain(context: context, connection: connection) }
    }

    /// A burst goes on: the next drain runs after the burst linger, and the queue counts it as scheduled meanwhile,
    /// so the senders queue without waking the event loop (``OutboundQueue/lingers(afterWriting:allowed:)``).
    private func lingerThenDrain(context: ChannelHandlerContext, connection: PeerConnection) {
        do {
            try context.eventLoop.assumeIsolated().scheduleCallback(in: burstLinger, handler: LingerEnd(handler: self))
            lingering = true
        } catch {
            // The event loop is shutting down: nothing is scheduled, so the queue must not count on a drain.
            _ = connection.nextChunk(isWritable: false)
        }
    }

    /// The end of a burst linger: writes what was queued meanwhile. A callback rather than a task: NIO schedules it
    /// without a promise.
    private struct LingerEnd: NIOScheduledCallbackHandler {
        let handler: PeerChannelHandler

        func handleScheduledCallback(eventLoop: some EventLoop) {
            handler.lingering = false
            handler.drain()
        }

        func didCancelScheduledCallback(eventLoop: some EventLoop) {
            handler.lingering = false
        }
    }

    /// Writes what was queued on the event loop: after the handlers of this read when they are running (what they
    /// queue shares one flush), else in a task of its own (frames queued in the same tick share one flush).
    func drainSoon(on eventLoop: any EventLoop) {
        if delivering {
            drainAfterDelivery = true
        } else {
            let loopBound = NIOLoopBound(self, eventLoop: eventLoop)
            eventLoop.execute { loopBound.value.drain() }
        }
    }

    /// This connection lost the tie-break.
    func retire() {
        holdsOutbound = false  // what is queued goes before the goodbye
        perform(lifecycle.retire(exchangesInFlight: exchangesInFlight))
    }

    /// Says goodbye (why, as text) and closes once it is written; closes at once without a reason.
    func close(goodbye reason: String?) {
        guard let context else { return }
        guard let reason else {
            context.close(promise: nil)
            return
        }
        holdsOutbound = false  // what is queued goes before the goodbye
        drain()
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(FrameWriter.frame(.goodbye, text: reason, allocator: channel.allocator)))
            .whenComplete { _ in channel.close(promise: nil) }
    }

    /// A reply was queued, or an exchange of ours ended: a connection both sides retired may close now.
    func exchangeEnded() {
        perform(lifecycle.exchangeEnded(exchangesInFlight: exchangesInFlight))
    }

    /// Waits for the response to request `id`, at most `timeout` from now on `eventLoop` (this handler's).
    func awaitResponse(
        id: UInt64, waiter: ExchangeWaiter<ResponseBody>, timeout: TimeAmount, on eventLoop: any EventLoop
    ) {
        let deadline = eventLoop.now + timeout
        if let refused = requests.add(id, waiter, deadline: deadline) {
            Self.failNotSent(refused)
        } else {
            armExpiryCheck(by: deadline, on: eventLoop)
        }
    }

    /// Waits for the pong to ping `id`, at most `timeout` from now on `eventLoop` (this handler's).
    func awaitPong(id: UInt64, waiter: ExchangeWaiter<Void>, timeout: TimeAmount, on eventLoop: any EventLoop) {
        let deadline = eventLoop.now + timeout
        if let refused = pings.add(id, waiter, deadline: deadline) {
            Self.failNotSent(refused)
        } else {
            armExpiryCheck(by: deadline, on: eventLoop)
        }
    }

    /// Makes sure the exchanges' timer fires by `deadline`: it stays as it is when it fires earlier already.
    private func armExpiryCheck(by deadline: NIODeadline, on eventLoop: any EventLoop) {
        if let armed = expiryCheck {
            guard deadline < armed.deadline else { return }
            armed.callback.cancel()
        }
        expiryCheck = nil
        do {
            let callback = try eventLoop.assumeIsolated().scheduleCallback(
                at: deadline, handler: ExpiryCheck(handler: self))
            expiryCheck = (deadline, callback)
        } catch {
            // The event loop is shutting down: its channels close, and the close fails what is in flight.
        }
    }

    /// Fails the requests and pings whose deadline passed with a ``RequestTimeoutError``, and arms the timer again
    /// for the earliest deadline left. An answered exchange left no timer to cancel, so this often finds nothing to
    /// fail.
    private func expireExchanges(on eventLoop: some EventLoop) {
        expiryCheck = nil
        let now = eventLoop.now
        for waiter in requests.expired(at: now) { answered(waiter) { $0.fail(RequestTimeoutError()) } }
        for waiter in pings.expired(at: now) { answered(waiter) { $0.fail(RequestTimeoutError()) } }
        let next = [requests.earliestDeadline, pings.earliestDeadline].compactMap { $0 }.min()
        if let next { armExpiryCheck(by: next, on: eventLoop) }
    }

    /// The exchanges' timer (``expireExchanges(on:)``). A callback rather than a task: NIO schedules it without a
    /// promise.
    private struct ExpiryCheck: NIOScheduledCallbackHandler {
        let handler: PeerChannelHandler

        func handleScheduledCallback(eventLoop: some EventLoop) {
            handler.expireExchanges(on: eventLoop)
        }
    }

    /// Fails a waiter in flight when the connection closed.
    private static func failClosed<Value>(_ waiter: ExchangeWaiter<Value>) {
        waiter.fail(ConnectionClosedError())
    }

    /// Fails a waiter the connection could not take (it closed before the frame was queued): nothing was sent, and
    /// the caller may try the peer's current connection.
    private static func failNotSent<Value>(_ waiter: ExchangeWaiter<Value>) {
        waiter.fail(FrameNotQueuedError())
    }

    /// Request `id` failed before its response: its frame was not queued.
    func abandonRequest(id: UInt64, error: any Error) {
        answered(requests.abandoned(id)) { $0.fail(error) }
    }

    /// Ping `id` failed before its pong: its frame was not queued.
    func abandonPing(id: UInt64, error: any Error) {
        answered(pings.abandoned(id)) { $0.fail(error) }
    }

    /// Resolves a waiter the tables gave back (if any), then lets the lifecycle know an exchange ended.
    private func answered<Value>(_ waiter: ExchangeWaiter<Value>?, _ resolve: (ExchangeWaiter<Value>) -> Void) {
        guard let waiter else { return }
        resolve(waiter)
        exchangeEnded()
    }

    /// How many of our requests and pings wait for their answer.
    var exchangesWaiting: Int { requests.count + pings.count }

    /// Whether anything is in flight: our requests and pings, or replies we owe.
    private var exchangesInFlight: Bool {
        !requests.isEmpty || !pings.isEmpty || (connection?.hasUnfinishedExchanges ?? false)
    }

    /// Why what a peer sends on a connection waits (``inboundHolds``).
    struct InboundHolds: OptionSet {
        let rawValue: UInt8
        /// Until the events of the handshake (`peerConnected`) reached the app.
        static let untilConnectedEvent = InboundHolds(rawValue: 1 << 0)
        /// Until the peer's other connection, which lost a tie-break, delivered everything.
        static let untilPredecessorFinished = InboundHolds(rawValue: 1 << 1)
    }

    /// Starts holding what the peer sends until its other connection finished; `false` when already holding for
    /// that, or closed.
    func startHold() -> Bool {
        guard !inboundHolds.contains(.untilPredecessorFinished), context != nil, connection != nil else { return false }
        inboundHolds.insert(.untilPredecessorFinished)
        return true
    }

    /// Ends the hold until the peer's other connection finished.
    func releaseHold() {
        releaseHold(.untilPredecessorFinished)
    }

    /// Ends the holds `reasons`; once none is left, delivers what was held, in order, after what arrived before it.
    func releaseHold(_ reasons: InboundHolds) {
        guard !inboundHolds.isDisjoint(with: reasons), let context else { return }
        inboundHolds.subtract(reasons)
        guard inboundHolds.isEmpty else { return }
        moveHeldToInbox()
        if !delivering { deliverInbox(context: context) }
    }

    /// Starts holding what we queue; `false` when already holding, or closed.
    func startOutboundHold() -> Bool {
        guard !holdsOutbound, context != nil, connection != nil else { return false }
        holdsOutbound = true
        return true
    }

    /// Ends an outbound hold: writes what was queued meanwhile.
    func releaseOutboundHold() {
        guard holdsOutbound else { return }
        holdsOutbound = false
        drain()
    }

    /// Runs `callback` once the peer can send nothing more on this connection.
    func whenInboundFinished(_ callback: @escaping @Sendable () -> Void) {
        if inboundFinished { callback() } else { inboundFinishedCallbacks.append(callback) }
    }

    private func perform(_ actions: [ConnectionLifecycle.Action]) {
        for action in actions {
            switch action {
            case .stopQueueing:
                connection?.stopQueueing()
            case .refuseAllFrames:
                connection?.refuseAllFrames()
            case .openReadGateForGood:
                connection?.readGate?.openForGood()
            case .drain:
                drain()
            case .sendGoodbye(let reason):
                guard let context else { continue }
                context.writeAndFlush(
                    wrapOutboundOut(FrameWriter.frame(.goodbye, text: reason, allocator: context.channel.allocator)),
                    promise: nil)
            case .scheduleForcedClose:
                guard let context else { continue }
                let channel = context.channel
                context.eventLoop.scheduleTask(in: .seconds(5)) { channel.close(promise: nil) }
            case .close:
                drain()
                context?.close(promise: nil)
            case .finishInbound:
                guard !inboundFinished else { continue }
                inboundFinished = true
                let callbacks = inboundFinishedCallbacks
                inboundFinishedCallbacks = []
                callbacks.forEach { $0() }
            case .failExchanges:
                expiryCheck?.callback.cancel()
                expiryCheck = nil
                requests.close().forEach(Self.failClosed)
                pings.close().forEach(Self.failClosed)
            }
        }
    }

    /// Queues the frames held while the connection waited for the peer's other connection after what arrived before.
    private func moveHeldToInbox() {
        while let frame = held.popFirst() { inbox.append(frame) }
        heldBytes = 0
    }

    private func handle(_ frame: Frame, on connection: PeerConnection, context: ChannelHandlerContext) {
        do {
            switch frame.knownKind {
            case .message:
                dispatcher.route(try FrameParser.message(frame.body, names: &typeNames), from: connection)
            case .request:
                dispatcher.handleRequest(try FrameParser.request(frame.body, names: &typeNames), from: connection)
            case .response:
                let response = try FrameParser.response(frame.body, names: &typeNames)
                answered(requests.answered(response.requestID)) { $0.succeed(response) }
            case .ping:
                // Built in the memory of the last pong, which the socket has taken by now as a rule (when it has
                // not, `clear()` copies on write: the bytes NIO still holds stay as they are).
                var pong = sparePong.take() ?? context.channel.allocator.buffer(capacity: 16)
                pong.clear()
                FrameWriter.write(.pong, into: &pong) { $0.writeImmutableBuffer(frame.body) }
                context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
                if pong.capacity <= 1024 { sparePong = pong }  // not a large one a peer's odd ping made
            case .pong:
                // A heartbeat's pong is empty; a ping's carries its id.
                guard let id = frame.body.getInteger(at: frame.body.readerIndex, as: UInt64.self) else { return }
                answered(pings.answered(id)) { $0.succeed(()) }
            case .goodbye:
                let reason =
                    frame.body.getString(at: frame.body.readerIndex, length: min(frame.body.readableBytes, 256)) ?? ""
                perform(lifecycle.receivedGoodbye(reason: reason, exchangesInFlight: exchangesInFlight))
            case .refuse:
                // The peer's accept policy refused us after it said hello (we dialed it): not established after all.
                let reason = frame.body.getString(
                    at: frame.body.readerIndex, length: min(frame.body.readableBytes, 1024))
                perform(lifecycle.receivedRefusal(reason: reason ?? "no reason given"))
            case .hello:
                logger.debug("ignoring a repeated handshake frame", metadata: ["peer": "\(connection.peer)"])
            case nil:
                logger.debug(
                    "skipping a frame of unknown kind",
                    metadata: ["peer": "\(connection.peer)", "kind": "\(frame.kind)"])
            }
        } catch {
            // A malformed frame is skipped; the stream stays in sync thanks to the length prefix.
            dispatcher.metrics.framesRefused.increment()
            dispatcher.report(
                .protocolViolation(peer: connection.peer, reason: "\(error)", cause: error), logLevel: .warning)
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { drain() }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let connection {
            // What arrived before the close is delivered, in order, even if the hold has not ended.
            inboundHolds = []
            moveHeldToInbox()
            while let frame = inbox.popFirst() { handle(frame, on: connection, context: context) }
            perform(lifecycle.channelClosed())
            delegate.connectionClosed(connection, peerStopping: lifecycle.peerIsStopping, refusal: lifecycle.refusal)
            self.connection = nil
        } else {
            established?.fail(handshakeError ?? ConnectionClosedError())
            delegate.handshakeFailed(
                role: role, remote: remoteDescription, dialedPeerID: dialedPeerID, error: handshakeError)
        }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if connection == nil {
            // Reported once, when the channel closes.
            handshakeError = error
        } else if let connection {
            let level: Logger.Level = (error as? IOError).map { _ in .debug } ?? .warning
            dispatcher.report(
                .protocolViolation(peer: connection.peer, reason: "\(error)", cause: error), logLevel: level)
        }
        context.close(promise: nil)
    }

    /// Whether data from the peer reached this host's TCP stack well within the last `timeout` seconds (in its
    /// first half), read by us or not.
    ///
    /// The heartbeat's read timeout counts from the last complete frame this handler saw. An event loop kept busy by
    /// a sender on other threads (each `send` queues a task, and NIO runs tasks until none is left before it reads
    /// again) can go seconds without reading, while the peer's pings and replies wait in the socket; and the bytes of
    /// one large frame can take longer than the timeout to arrive on a slow link. In both cases the peer is alive,
    /// and closing would lose what is queued for it. The kernel knows when data last arrived (`TCP_INFO`, Linux, in
    /// milliseconds at the kernel's tick granularity: hence the half, which keeps a dead peer's detection at one
    /// timeout). Elsewhere, or if it cannot say, the answer is `false` and the timeout applies as before.
    static func kernelReceivedData(on channel: any Channel, within timeout: Double) -> EventLoopFuture<Bool> {
        #if os(Linux)
        if let provider = channel as? any SocketOptionProvider {
            return provider.getTCPInfo()
                .map { info in Double(info.tcpi_last_data_recv) / 1000 < timeout / 2 }
                .recover { _ in false }
        }
        #endif
        return channel.eventLoop.makeSucceededFuture(false)
    }

    /// `address:port` text for a socket address.
    static func text(of address: SocketAddress) -> String {
        guard let ip = address.ipAddress, let port = address.port else { return "\(address)" }
        return address.protocol == .inet6 ? "[\(ip)]:\(port)" : "\(ip):\(port)"
    }
}
