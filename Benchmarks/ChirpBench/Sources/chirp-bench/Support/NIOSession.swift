import Foundation
import NIOCore
import NIOPosix

#if os(Linux)
/// The round trip of a bare SwiftNIO ping-pong: a client channel in this process, on an event loop of its own, and the
/// `nio-echo` role in a child process (``PeerRoles/nioEcho()``). The same frames as the raw echo's, no Chirp: the floor
/// of any peer built on event loops, measured in the same run as Chirp's round trips and the raw echo.
///
/// Two ways to drive it, as Chirp's two request paths: ``onLoop(count:frame:)`` writes each frame from the handler
/// that read the previous echo (Chirp's ping from the connection's event loop); ``Driver/fromTask(count:frame:)`` waits for
/// each echo in a task of Swift's global executor, one hop to the loop to write and one back to resume (Chirp's
/// default path).
final class NIOSession {
    let child: Child
    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel
    private let client: NIOLoopBound<PingPongHandler>

    init(executable: String) throws {
        let (child, port) = try Child.listeningPeer(executable, role: "nio-echo", what: "the NIO echo")
        self.child = child
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        do {
            let handler = try loop.submit { NIOLoopBound(PingPongHandler(), eventLoop: loop) }.wait()
            channel = try ClientBootstrap(group: loop)
                .channelOption(.tcpOption(.tcp_nodelay), value: 1)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(handler.value)
                    }
                }
                .connect(host: "127.0.0.1", port: port).wait()
            client = handler
        } catch {
            child.stop()
            try? group.syncShutdownGracefully()
            throw error
        }
    }

    /// Round-trip times (µs) of `count` echoes of `frame`, each written by the handler that read the previous one.
    func onLoop(count: Int, frame: [UInt8]) throws -> [Double] {
        let client = self.client
        let loop = channel.eventLoop
        return try loop.flatSubmit {
            let done = loop.makePromise(of: [Double].self)
            client.value.run(count: count, frame: ByteBuffer(bytes: frame), done: done)
            return done.futureResult
        }.wait()
    }

    /// What a task needs to drive the client (the session itself stays with the harness's thread).
    var driver: Driver { Driver(client: client, loop: channel.eventLoop) }

    struct Driver: Sendable {
        fileprivate let client: NIOLoopBound<PingPongHandler>
        let loop: any EventLoop

        /// Round-trip times (µs) of `count` echoes of `frame`, each awaited by a task of the global executor.
        func fromTask(count: Int, frame: [UInt8]) async throws -> [Double] {
            let client = self.client
            let buffer = ByteBuffer(bytes: frame)
            var times: [Double] = []
            times.reserveCapacity(count)
            for _ in 0..<count {
                let start = nowNanos()
                let echoed = await withUnsafeContinuation { (continuation: UnsafeContinuation<Bool, Never>) in
                    loop.execute { client.value.send(buffer, resuming: continuation) }
                }
                guard echoed else { throw BenchError("the NIO echo closed the connection") }
                times.append(Double(nowNanos() - start) / 1000)
            }
            return times
        }
    }

    func close() {
        try? channel.close().wait()
        try? group.syncShutdownGracefully()
        child.stop()
    }

    /// Counts the echo's bytes; when a whole frame is back, either writes the next one (a run on the loop) or resumes
    /// the waiting task.
    fileprivate final class PingPongHandler: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer

        private var context: ChannelHandlerContext?
        /// The frame in flight; its size is what an echo must bring back.
        private var frame = ByteBuffer()
        private var received = 0
        /// A run on the loop: the times so far, the echoes left, when the one in flight was written, where the times go.
        private var times: [Double] = []
        private var left = 0
        private var start: UInt64 = 0
        private var done: EventLoopPromise<[Double]>?
        /// A task waiting for the echo in flight (`false`: the connection closed).
        private var waiter: UnsafeContinuation<Bool, Never>?

        func handlerAdded(context: ChannelHandlerContext) { self.context = context }
        func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

        func run(count: Int, frame: ByteBuffer, done: EventLoopPromise<[Double]>) {
            guard let context, count > 0 else {
                done.fail(BenchError("the NIO client is not connected"))
                return
            }
            self.frame = frame
            self.done = done
            times = []
            times.reserveCapacity(count)
            left = count
            start = nowNanos()
            context.writeAndFlush(wrapOutboundOut(frame), promise: nil)
        }

        func send(_ frame: ByteBuffer, resuming continuation: UnsafeContinuation<Bool, Never>) {
            guard let context, context.channel.isActive else { return continuation.resume(returning: false) }
            self.frame = frame
            waiter = continuation
            context.writeAndFlush(wrapOutboundOut(frame), promise: nil)
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            received += unwrapInboundIn(data).readableBytes
            guard received >= frame.readableBytes, frame.readableBytes > 0 else { return }
            received -= frame.readableBytes
            if let waiter {
                self.waiter = nil
                waiter.resume(returning: true)
            } else if let done {
                times.append(Double(nowNanos() - start) / 1000)
                left -= 1
                if left == 0 {
                    self.done = nil
                    done.succeed(times)
                } else {
                    start = nowNanos()
                    context.writeAndFlush(wrapOutboundOut(frame), promise: nil)
                }
            }
        }

        func channelInactive(context: ChannelHandlerContext) {
            done?.fail(BenchError("the NIO echo closed the connection"))
            done = nil
            waiter?.resume(returning: false)
            waiter = nil
        }
    }
}
#endif
