import ChirpWire
import NIOCore

/// The heartbeat (``HeartbeatHandler``'s events): a ping when we have been quiet, a close when the peer has been.
extension PeerChannelHandler {
    func heartbeatEvent(_ heartbeat: HeartbeatHandler.Event, context: ChannelHandlerContext) {
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
}
