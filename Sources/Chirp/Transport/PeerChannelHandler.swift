import Logging
import NIOCore

/// The last handler of every connection: turns frames into calls on the ``ConnectionDelegate`` (the peer table) and
/// the ``MessageDispatcher`` (messages and requests), and keeps the
/// heartbeat (a ping when we have been quiet, a close when the peer has).
final class PeerChannelHandler: ChannelInboundHandler {
    typealias InboundIn = Frame
    typealias OutboundOut = ByteBuffer

    private let delegate: any ConnectionDelegate
    private let dispatcher: MessageDispatcher
    private let role: ConnectionRole
    private let localID: String
    private let outboundLimit: Int
    /// The peer id we meant to reach, for dialed connections.
    private let dialedPeerID: String?
    private let host: String?
    private let logger: Logger
    /// When this channel was initialized: the connection opened then, before its handshake.
    private let openedAt: ContinuousClock.Instant
    private let heartbeatTimeout: Double
    /// Closed while a consumer of this connection's messages is full; the heartbeat does not count that time.
    private let readGate: ReadGate?
    private var connection: PeerConnection?
    private var handshakeError: (any Error)?
    private var remoteDescription = "unknown"
    /// Completed once the handshake is done (or failed if the channel closes before).
    private let established: EventLoopPromise<PeerConnection>?
    /// Frames held while the connection waits for another one with the same peer (``PeerConnection/holdInbound(until:)``).
    private var held = CircularBuffer<Frame>()
    private var heldBytes = 0
    /// Past this many held bytes the hold ends early: the connection is never starved of reads, since the
    /// heartbeat would close it, at the price of the order across the switch.
    static let maximumHeldBytes = 8 << 20

    init(
        delegate: any ConnectionDelegate, dispatcher: MessageDispatcher, role: ConnectionRole, localID: String, dialedPeerID: String?, host: String?,
        outboundLimit: Int, heartbeatTimeout: Double, logger: Logger, established: EventLoopPromise<PeerConnection>? = nil,
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
        self.heartbeatTimeout = heartbeatTimeout
        self.logger = logger
        self.openedAt = ContinuousClock.now
    }

    func channelActive(context: ChannelHandlerContext) {
        remoteDescription = context.remoteAddress.map(Self.text(of:)) ?? "unknown"
        context.fireChannelActive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let completed = event as? HandshakeCompleted {
            let addresses = context.remoteAddress.map { [Self.text(of: $0)] } ?? []
            let connection = PeerConnection(
                context: context, role: role, remote: completed.remote, localID: localID, addresses: addresses,
                host: host, outboundLimit: outboundLimit, openedAt: openedAt,
                readGate: readGate.map { LoopBoundGate($0, eventLoop: context.eventLoop) })
            self.connection = connection
            connection.inboundReleased = { [weak self] in self?.deliverHeld(context: context) }
            delegate.connectionEstablished(connection)
            established?.succeed(connection)
            return
        }
        if let heartbeat = event as? HeartbeatHandler.Event {
            switch heartbeat {
            case .quiet:
                // Quiet for a heartbeat interval: say we are alive. Never before the handshake.
                if connection != nil {
                    context.writeAndFlush(wrapOutboundOut(FrameWriter.frame(.ping, body: ByteBuffer(), allocator: context.channel.allocator)), promise: nil)
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
                        self.logger.debug("no frame for the heartbeat timeout, but data from the peer arrived lately; keeping the connection", metadata: ["peer": "\(connection.peer)"])
                        return
                    }
                    self.logger.notice("closing connection: nothing received for \(self.heartbeatTimeout) s", metadata: ["peer": "\(connection.peer)"])
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
        if connection.holdsInbound, frame.knownKind != .ping, frame.knownKind != .pong {
            held.append(frame)
            heldBytes += frame.body.readableBytes
            if heldBytes > Self.maximumHeldBytes {
                logger.notice("delivering before the peer's other connection is done: too much waits", metadata: [
                    "peer": "\(connection.peer)", "bytes": "\(heldBytes)"])
                connection.releaseInbound()
            }
            return
        }
        handle(frame, on: connection, context: context)
    }

    /// Delivers, in order, the frames held while the connection waited for the peer's other connection.
    private func deliverHeld(context: ChannelHandlerContext) {
        guard let connection else { return }
        while let frame = held.popFirst() {
            handle(frame, on: connection, context: context)
        }
        heldBytes = 0
    }

    private func handle(_ frame: Frame, on connection: PeerConnection, context: ChannelHandlerContext) {
        do {
            switch frame.knownKind {
            case .message:
                dispatcher.route(try FrameParser.message(frame.body), from: connection)
            case .request:
                dispatcher.handleRequest(try FrameParser.request(frame.body), from: connection)
            case .response:
                connection.completeRequest(try FrameParser.response(frame.body))
            case .ping:
                context.writeAndFlush(wrapOutboundOut(FrameWriter.frame(.pong, body: frame.body, allocator: context.channel.allocator)), promise: nil)
            case .pong:
                connection.completePing(frame.body)
            case .goodbye:
                let reason = frame.body.getString(at: frame.body.readerIndex, length: min(frame.body.readableBytes, 256)) ?? ""
                connection.receivedGoodbye(reason: reason)
            case .refuse:
                // The peer's accept policy refused us after it said hello (we dialed it): not established after all.
                let reason = frame.body.getString(at: frame.body.readerIndex, length: min(frame.body.readableBytes, 1024))
                connection.receivedRefusal(reason: reason ?? "no reason given")
            case .hello:
                logger.debug("ignoring a repeated handshake frame", metadata: ["peer": "\(connection.peer)"])
            case nil:
                logger.debug("skipping a frame of unknown kind", metadata: ["peer": "\(connection.peer)", "kind": "\(frame.kind)"])
            }
        } catch {
            // A malformed frame is skipped; the stream stays in sync thanks to the length prefix.
            dispatcher.report(.protocolViolation(peer: connection.peer.name, reason: "\(error)"), logLevel: .warning)
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { connection?.drain() }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let connection {
            // What arrived before the close is delivered, even if the hold has not ended.
            deliverHeld(context: context)
            connection.closed()
            delegate.connectionClosed(connection)
            self.connection = nil
        } else {
            established?.fail(handshakeError ?? ConnectionClosedError())
            delegate.handshakeFailed(role: role, remote: remoteDescription, dialedPeerID: dialedPeerID, error: handshakeError)
        }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if connection == nil {
            // Reported once, when the channel closes.
            handshakeError = error
        } else if let connection {
            let level: Logger.Level = (error as? IOError).map { _ in .debug } ?? .warning
            dispatcher.report(.protocolViolation(peer: connection.peer.name, reason: "\(error)"), logLevel: level)
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
