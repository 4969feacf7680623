import ChirpWire
import NIOCore

/// The heartbeat (``HeartbeatHandler``'s events): a ping when we have been quiet, and when the peer has been, a look
/// at the kernel's TCP that decides (``SilenceRule``) whether it is dead or on a link that loses packets.
extension PeerChannelHandler {
    func heartbeatEvent(_ heartbeat: HeartbeatHandler.Event, context: ChannelHandlerContext) {
        switch heartbeat {
        case .quiet(let peerQuiet):
            // Quiet for a heartbeat interval: say we are alive. Never before the handshake.
            guard let connection else { return }
            if peerQuiet, let local = context.channel.localAddress, LocalAddress.isGone(local) {
                // The peer has been quiet too, and this host no longer has the address this connection goes from
                // (a new address after a reconnect): nothing can arrive here any more. Closed now rather than after
                // the heartbeat timeout, so the peer is dialed again from where we are now.
                logger.notice(
                    "closing connection: this host no longer has its local address",
                    metadata: ["peer": "\(connection.peer)", "local": "\(local.endpointText)"])
                context.close(promise: nil)
                return
            }
            context.writeAndFlush(
                wrapOutboundOut(FrameWriter.frame(.ping, body: ByteBuffer(), allocator: context.channel.allocator)),
                promise: nil)
        case .silent(let since):
            // Before the handshake, the handshake timeout (HandshakeHandler) decides alone: a hello that is still
            // arriving, or that has not started, gets the whole of it (Protocol.md section 4).
            guard let connection else { return }
            if readGate?.isClosed == true {
                // We stopped reading on purpose (a consumer of this peer's messages is full): its silence is ours.
                return
            }
            // The event loop that runs this also keeps the channel: the look comes back on it.
            TCPLook.read(from: context.channel).assumeIsolated().whenSuccess { look in
                let verdict = self.silenceRule.look(look, silentSince: since, now: .now())
                let seconds = Double((NIODeadline.now() - since).nanoseconds) / 1e9
                let silence = "\((seconds * 10).rounded() / 10)"
                let tcp = look?.summary ?? "no TCP_INFO"
                switch verdict {
                case .keep(let reason):
                    self.logger.debug(
                        "no frame for \(silence) s; keeping the connection: \(reason.rawValue)",
                        metadata: ["peer": "\(connection.peer)", "tcp": "\(tcp)"])
                case .close(let reason):
                    self.logger.notice(
                        "closing connection: no frame for \(silence) s, and \(reason.rawValue)",
                        metadata: ["peer": "\(connection.peer)", "tcp": "\(tcp)"])
                    context.close(promise: nil)
                }
            }
        }
    }
}
