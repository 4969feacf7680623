import ChirpWire
import NIOCore

/// The heartbeat's clocks (Docs/Protocol.md section 7): when this side last wrote, and when the last complete frame
/// arrived, checked by one scheduled task each.
///
/// NIO's `IdleStateHandler` does the same job, but learns of writes through a promise attached to every write: an
/// allocation and a callback per frame on the hot path. This handler notes the time at each `flush` and at the end
/// of each read that brought a frame (one clock read per batch, not per frame), and its checks compare those times
/// with the deadlines. It decides nothing: it fires ``Event``s, and ``PeerChannelHandler`` (after the handshake)
/// pings or closes.
final class HeartbeatHandler: ChannelDuplexHandler, StartsWhenActive, RemovableChannelHandler {
    typealias InboundIn = Frame
    typealias InboundOut = Frame
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    // `@exclusivity(unchecked)`: one event loop, no overlapping access; see PeerChannelHandler.

    /// Fired as user inbound events.
    enum Event: Sendable {
        /// Nothing was written for the heartbeat interval: time for a ping. `peerQuiet`: nothing arrived either for
        /// two intervals (the peer pings at least once an interval), the moment to check that our end still exists.
        case quiet(peerQuiet: Bool)
        /// No complete frame arrived for the heartbeat timeout (fired again every timeout while it lasts); the
        /// silence began at `since`, when the last complete frame arrived (or the handler started).
        case silent(since: NIODeadline)
    }

    private let interval: TimeAmount
    private let timeout: TimeAmount
    @exclusivity(unchecked) private var lastRead = NIODeadline.now()
    @exclusivity(unchecked) private var lastWrite = NIODeadline.now()
    /// A frame passed since the last `channelReadComplete`.
    @exclusivity(unchecked) private var readFrame = false
    private var readCheck: Scheduled<Void>?
    private var writeCheck: Scheduled<Void>?

    /// - Parameters:
    ///   - interval: after this long without writing, ``Event/quiet`` fires.
    ///   - timeout: after this long without a complete frame, ``Event/silent`` fires.
    init(interval: TimeAmount, timeout: TimeAmount) {
        self.interval = interval
        self.timeout = timeout
    }

    /// How long no complete frame has arrived (read on the event loop).
    var peerQuietFor: TimeAmount { .now() - lastRead }

    func handlerRemoved(context: ChannelHandlerContext) {
        stop()
    }

    func channelInactive(context: ChannelHandlerContext) {
        stop()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        readFrame = true
        context.fireChannelRead(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if readFrame {
            readFrame = false
            lastRead = .now()
        }
        context.fireChannelReadComplete()
    }

    func flush(context: ChannelHandlerContext) {
        lastWrite = .now()
        context.flush()
    }

    func start(context: ChannelHandlerContext) {
        guard readCheck == nil else { return }
        let now = NIODeadline.now()
        lastRead = now
        lastWrite = now
        scheduleReadCheck(context: context, at: now + timeout)
        scheduleWriteCheck(context: context, at: now + interval)
    }

    private func stop() {
        readCheck?.cancel()
        writeCheck?.cancel()
        readCheck = nil
        writeCheck = nil
    }

    private enum Check {
        case read, write
    }

    private func scheduleReadCheck(context: ChannelHandlerContext, at deadline: NIODeadline) {
        readCheck = schedule(.read, context: context, at: deadline)
    }

    private func scheduleWriteCheck(context: ChannelHandlerContext, at deadline: NIODeadline) {
        writeCheck = schedule(.write, context: context, at: deadline)
    }

    private func schedule(_ check: Check, context: ChannelHandlerContext, at deadline: NIODeadline) -> Scheduled<Void> {
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        return context.eventLoop.scheduleTask(deadline: deadline) {
            let (handler, context) = loopBound.value
            handler.run(check, context: context)
        }
    }

    /// A check is due: fires its event when its clock shows no activity for its period, and schedules the next one.
    private func run(_ check: Check, context: ChannelHandlerContext) {
        let now = NIODeadline.now()
        let (pending, last, period, event): (Scheduled<Void>?, NIODeadline, TimeAmount, Event) =
            switch check {
            case .read: (readCheck, lastRead, timeout, .silent(since: lastRead))
            case .write: (writeCheck, lastWrite, interval, .quiet(peerQuiet: now - lastRead >= interval * 2))
            }
        guard pending != nil, context.channel.isActive else { return }
        let due = last + period
        let next = now < due ? due : now + period
        switch check {
        case .read: scheduleReadCheck(context: context, at: next)
        case .write: scheduleWriteCheck(context: context, at: next)
        }
        if now >= due { context.fireUserInboundEventTriggered(event) }
    }
}
