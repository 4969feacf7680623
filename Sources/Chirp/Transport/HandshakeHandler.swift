import Logging
import NIOCore

/// Fired down the pipeline once the remote hello was received and accepted.
struct HandshakeCompleted: Sendable {
    var remote: Hello
}

/// Runs the handshake: sends our hello as soon as the channel is active, waits (with a deadline) for the remote hello,
/// checks it, then gets out of the way.
///
/// A remote that sends anything but a hello first, a hello we cannot accept, or nothing within the deadline, is
/// refused: a `refuse` frame with the reason is sent when it could be a Chirp peer, and the channel is closed.
/// Failures travel down the pipeline as `HandshakeError`s so the last handler reports them in one place.
final class HandshakeHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = Frame
    typealias InboundOut = Frame
    typealias OutboundOut = ByteBuffer

    private enum State {
        case waiting
        case done
    }

    private let local: Hello
    private let timeout: TimeAmount
    private var state = State.waiting
    private var sentHello = false
    private var deadline: Scheduled<Void>?

    init(local: Hello, timeout: TimeAmount) {
        self.local = local
        self.timeout = timeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { start(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context: context)
        context.fireChannelActive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
    }

    private func start(context: ChannelHandlerContext) {
        guard !sentHello else { return }
        sentHello = true
        do {
            context.writeAndFlush(wrapOutboundOut(try local.frame(allocator: context.channel.allocator)), promise: nil)
        } catch {
            context.fireErrorCaught(HandshakeError.malformedHello("could not encode our hello: \(error)"))
            context.close(promise: nil)
            return
        }
        let loopBoundContext = NIOLoopBound(context, eventLoop: context.eventLoop)
        let seconds = Double(timeout.nanoseconds) / 1e9
        deadline = context.eventLoop.scheduleTask(in: timeout) { [self] in
            guard case .waiting = self.state else { return }
            let context = loopBoundContext.value
            context.fireErrorCaught(HandshakeError.timedOut(seconds: seconds))
            context.close(promise: nil)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .waiting = state else {
            context.fireChannelRead(data)
            return
        }
        let frame = unwrapInboundIn(data)
        switch frame.knownKind {
        case .hello:
            do {
                let remote = try Hello.parse(frame.body)
                if let refusal = local.refusal(of: remote) {
                    refuse(context: context, error: refusal)
                    return
                }
                state = .done
                deadline?.cancel()
                context.fireUserInboundEventTriggered(HandshakeCompleted(remote: remote))
                context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
            } catch let error as HandshakeError {
                refuse(context: context, error: error)
            } catch {
                refuse(context: context, error: .malformedHello("\(error)"))
            }
        case .refuse:
            let reason = frame.body.getString(at: frame.body.readerIndex, length: min(frame.body.readableBytes, 1024)) ?? "no reason given"
            state = .done
            context.fireErrorCaught(HandshakeError.refusedByRemote(reason: reason))
            context.close(promise: nil)
        default:
            state = .done
            context.fireErrorCaught(HandshakeError.unexpectedFrame(kind: frame.kind))
            context.close(promise: nil)
        }
    }

    /// Tells the remote why, then closes.
    private func refuse(context: ChannelHandlerContext, error: HandshakeError) {
        state = .done
        deadline?.cancel()
        context.fireErrorCaught(error)
        let frame = FrameWriter.frame(.refuse, text: error.description, allocator: context.channel.allocator)
        let loopBoundContext = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(frame)).whenComplete { _ in loopBoundContext.value.close(promise: nil) }
    }
}

extension HandshakeHandler: @unchecked Sendable {}
