import ChirpWire
import Logging
import NIOCore

/// The last handler of every connection: it forwards the channel's events to the owners of the connection's state and
/// carries out what they decide. One job per file:
///
/// - here: the handshake's end (the ``PeerConnection`` it makes), the close, errors, and the connection's life
///   (``ConnectionLifecycle``, whose actions ``perform(_:)`` carries out);
/// - `PeerChannelHandler+Inbound.swift`: what the peer sends, frame by frame, to the ``ConnectionDelegate`` (the peer
///   table) and the ``MessageDispatcher`` (messages and requests), within a time budget per turn of the event loop,
///   and held while the events of the handshake or the peer's other connection come first;
/// - `PeerChannelHandler+Outbound.swift`: the drain of the connection's ``ConnectionOutbound`` into the channel, and
///   the burst linger's timer;
/// - `PeerChannelHandler+Exchanges.swift`: our requests and pings in flight and their timer (``ExchangeState``; what
///   other threads count of an exchange, its ``ExchangeTickets``, is behind the connection's lock);
/// - `PeerChannelHandler+Heartbeat.swift`: a ping when we have been quiet, a close when the peer has been.
///
/// All of it is touched on the channel's event loop only. Other threads reach it through ``PeerConnection``, which
/// hands it work once (`eventLoop.execute`).
final class PeerChannelHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = Frame
    typealias OutboundOut = ByteBuffer
    // `@exclusivity(unchecked)` on the stored properties touched for every frame: the handler lives on one event
    // loop, and no access to them overlaps another (each is a plain read or an in-place change that ends before any
    // other code runs). The runtime's dynamic check of each access had cost about a tenth of a small message's
    // receive (as it had for the JSON coders, FastJSONEncoder).

    let delegate: any ConnectionDelegate
    let dispatcher: MessageDispatcher
    let role: ConnectionRole
    let localID: String
    let outboundLimit: Int
    /// ``Configuration/burstLinger``.
    let burstLinger: TimeAmount
    /// The peer id we meant to reach, for dialed connections.
    let dialedPeerID: String?
    let host: String?
    let logger: Logger
    /// When this channel was initialized: the connection opened then, before its handshake.
    let openedAt: ContinuousClock.Instant
    let heartbeatTimeout: Double
    /// Closed while a consumer of this connection's messages is full; the heartbeat does not count that time.
    let readGate: ReadGate?
    /// Whether a silent connection is dead or on a lossy link (``SilenceRule``): the heartbeat asks it.
    var silenceRule: SilenceRule
    @exclusivity(unchecked) var connection: PeerConnection?
    @exclusivity(unchecked) var context: ChannelHandlerContext?
    var lifecycle = ConnectionLifecycle()
    /// Our requests and pings in flight, and when their timer is to fire.
    var exchanges = ExchangeState<ExchangeWaiter<ResponseBody>, ExchangeWaiter<Void>>()
    /// The exchanges' one timer (``ExpiryCheck``), armed for ``ExchangeState/timerDeadline``.
    var expiryCheck: NIOScheduledCallback?
    /// Set once the peer can send nothing more here: its `goodbye(duplicate)` arrived or the channel closed.
    var inboundFinished = false
    var inboundFinishedCallbacks: [@Sendable () -> Void] = []
    /// Why what the peer sends here waits, if it does: until the events of the handshake reached the app, until its
    /// other connection delivered first (``PeerConnection/holdInbound(until:)``), or both.
    @exclusivity(unchecked) var inboundHolds: InboundHolds = []
    /// The last pong written, whose memory the next one reuses.
    @exclusivity(unchecked) var sparePong: ByteBuffer?
    /// Frames and bytes read since the last read completed, counted into the metrics once per read.
    @exclusivity(unchecked) var framesRead = 0
    @exclusivity(unchecked) var bytesRead = 0
    var handshakeError: (any Error)?
    var remoteDescription = "unknown"
    /// Completed once the handshake is done (or failed if the channel closes before).
    let established: EventLoopPromise<PeerConnection>?
    /// Frames held while the connection waits for another one with the same peer (``PeerConnection/holdInbound(until:)``).
    @exclusivity(unchecked) var held = CircularBuffer<Frame>()
    /// The channel closed while what the peer sent was held (``channelInactive(context:)``): the end waits too.
    @exclusivity(unchecked) var closedWhileHolding = false
    /// Frames read and not handled yet: what one read brought in, while the handlers of earlier frames run
    /// (``deliverInbox(context:)``).
    @exclusivity(unchecked) var inbox = CircularBuffer<Frame>()
    /// ``deliverInbox(context:)`` runs, or its continuation is scheduled.
    @exclusivity(unchecked) var delivering = false
    /// Frames were queued on the event loop while delivering: written when this batch of handlers is done.
    @exclusivity(unchecked) var drainAfterDelivery = false
    /// When handlers started running in this turn of the event loop (a read, or a continuation), and how many ran.
    @exclusivity(unchecked) var turnStart: NIODeadline?
    @exclusivity(unchecked) var handledThisTurn = 0
    @exclusivity(unchecked) var heldBytes = 0
    /// The type names this connection received lately, matched on their bytes: no string is made for them again.
    @exclusivity(unchecked) var typeNames = TypeNameCache()
    /// The frames the peer sends in parts, as they arrive (Docs/Protocol.md section 3).
    var parts: PartAssembler
    /// A drain runs (``drain()``): one that the channel's writes would start meanwhile runs after it instead.
    @exclusivity(unchecked) var draining = false
    @exclusivity(unchecked) var drainAgain = false
    /// The running drain writes everything queued (``drain(everything:)``).
    @exclusivity(unchecked) var drainEverything = false
    /// Past this many held bytes the hold ends early: the connection is never starved of reads, since the
    /// heartbeat would close it, at the price of the order across the switch.
    static let maximumHeldBytes = 8 << 20

    init(
        delegate: any ConnectionDelegate, dispatcher: MessageDispatcher, role: ConnectionRole, localID: String,
        dialedPeerID: String?, host: String?,
        outboundLimit: Int, burstLinger: TimeAmount, heartbeatTimeout: Double, logger: Logger,
        maximumMessageSize: Int = 64 << 20,
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
        self.silenceRule = SilenceRule(timeout: .nanoseconds(Int64(heartbeatTimeout * 1e9)))
        self.logger = logger
        self.openedAt = ContinuousClock.now
        self.parts = PartAssembler(maxFrameSize: maximumMessageSize)
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
                readGate: readGate.map { LoopBoundGate($0, eventLoop: context.eventLoop) },
                fingerprint: completed.fingerprint)
            self.connection = connection
            if completed.remote.acceptsParts {
                Self.limitUnsentBytes(of: context.channel, to: PartBudget.slowLinkUnsentLimit)
            }
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
            heartbeatEvent(heartbeat, context: context)
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

    func channelReadComplete(context: ChannelHandlerContext) {
        if framesRead > 0 {
            dispatcher.metrics.framesIn.increment(by: Int64(framesRead))
            dispatcher.metrics.bytesIn.increment(by: Int64(bytesRead))
            (framesRead, bytesRead) = (0, 0)
        }
        if !delivering { startTurn() }
        context.fireChannelReadComplete()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { drain() }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let connection {
            if !inboundHolds.isEmpty {
                // What the peer sent waits for something that must come first: the app being told the peer connected
                // (its event queue is behind; a connection that lost the tie-break closes this early when the peer
                // sent on it first), or the peer's other connection delivering everything. So does the end of this
                // connection (``releaseHold(_:)``): the app sees the peer connect, its messages, then it go.
                closedWhileHolding = true
            } else {
                finishClosed(connection, context: context)
            }
        } else {
            established?.fail(handshakeError ?? ConnectionClosedError())
            delegate.handshakeFailed(
                role: role, remote: remoteDescription, dialedPeerID: dialedPeerID, error: handshakeError)
        }
        context.fireChannelInactive()
    }

    /// The end of a closed connection, once nothing holds what the peer sent: what arrived is delivered, in order;
    /// then the lifecycle and the engine learn it closed. `context` is `nil` when this waited past the handler's
    /// removal.
    func finishClosed(_ connection: PeerConnection, context: ChannelHandlerContext?) {
        deliverEverythingLeft(on: connection, context: context)
        perform(lifecycle.channelClosed())
        delegate.connectionClosed(connection, peerStopping: lifecycle.peerIsStopping, refusal: lifecycle.refusal)
        self.connection = nil
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

    // MARK: - The connection's life (on the event loop, called through PeerConnection)

    /// This connection lost the tie-break.
    func retire() {
        connection?.outbound.releaseHold()  // what is queued goes before the goodbye
        perform(lifecycle.retire(exchangesInFlight: exchangesInFlight))
    }

    /// Says goodbye (why, as text) and closes once it is written; closes at once without a reason.
    func close(goodbye reason: String?) {
        guard let context else { return }
        guard let reason else {
            context.close(promise: nil)
            return
        }
        connection?.outbound.releaseHold()  // what is queued goes before the goodbye
        drain(everything: true)  // the frames in parts too, all of them
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(FrameWriter.frame(.goodbye, text: reason, allocator: channel.allocator)))
            .whenComplete { _ in channel.close(promise: nil) }
    }

    /// A reply was queued, or an exchange of ours ended: a connection both sides retired may close now.
    func exchangeEnded() {
        perform(lifecycle.exchangeEnded(exchangesInFlight: exchangesInFlight))
    }

    /// Whether anything is in flight: our requests and pings (``ExchangeState``), or replies we owe and waits not
    /// registered yet (``ExchangeTickets``, asked only when the first has none).
    var exchangesInFlight: Bool {
        !exchanges.isEmpty || (connection?.hasUnfinishedExchanges ?? false)
    }

    func perform(_ actions: [ConnectionLifecycle.Action]) {
        for action in actions {
            switch action {
            case .stopQueueing:
                connection?.outbound.retire()
            case .refuseAllFrames:
                connection?.outbound.close()
            case .openReadGateForGood:
                connection?.readGate?.openForGood()
            case .drain:
                drain(everything: true)  // before the goodbye that follows: the frames in parts too, all of them
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
                drain(everything: true)
                context?.close(promise: nil)
            case .finishInbound:
                guard !inboundFinished else { continue }
                inboundFinished = true
                let callbacks = inboundFinishedCallbacks
                inboundFinishedCallbacks = []
                callbacks.forEach { $0() }
            case .failExchanges:
                failExchanges()
            }
        }
    }

    /// Keeps the kernel from taking more than `limit` bytes it has not sent yet (Linux `TCP_NOTSENT_LOWAT`; 0: the
    /// system's default, no bound): what it took would go out before a small frame written after it. With a peer
    /// that reassembles parts, the channel is fed a part at a time as the kernel takes them, so on a slow link a small
    /// frame waits for about one part (the rest of the one the channel holds, and what the kernel holds), not for
    /// megabytes of socket buffer; on a fast one the bound goes (``PartBudget/unsentLimit``). Elsewhere, or when the
    /// kernel refuses, nothing changes but that wait.
    static func limitUnsentBytes(of channel: any Channel, to limit: Int) {
        #if os(Linux)
        guard let provider = channel as? any SocketOptionProvider else { return }
        // TCP_NOTSENT_LOWAT (linux/tcp.h): 25.
        _ = provider.unsafeSetSocketOption(
            level: NIOBSDSocket.OptionLevel.tcp, name: NIOBSDSocket.Option(rawValue: 25), value: CInt(limit))
        #endif
    }

    /// `address:port` text for a socket address (``SocketAddress/endpointText``: `[fe80::1%eth0]:50123` for IPv6).
    static func text(of address: SocketAddress) -> String { address.endpointText }
}
