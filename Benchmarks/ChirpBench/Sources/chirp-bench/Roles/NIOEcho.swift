import NIOCore
import NIOPosix

#if os(Linux)
extension PeerRoles {
    /// A bare SwiftNIO echo, the answering end of ``NIOSession``: one event loop, one handler that writes back what it
    /// reads. No Chirp: what an event-loop peer costs on this machine before any protocol, for the round-trip figures.
    /// Runs until its standard input closes.
    static func nioEcho() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let server = try ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(EchoHandler()) }
            }
            .bind(host: "127.0.0.1", port: 0).wait()
        say("port \(server.localAddress?.port ?? 0)")
        while readLine() != nil {}
        try? server.close().wait()
    }

    /// Writes back each read as it came.
    private final class EchoHandler: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            context.writeAndFlush(data, promise: nil)
        }
    }
}
#endif
