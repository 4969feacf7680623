import ChirpWire
import NIOCore

/// The writing of what the connection's ``ConnectionOutbound`` holds: the handler asks it to drain into the channel,
/// counts what it wrote into the metrics, and runs the burst linger's timer when it says so.
extension PeerChannelHandler {
    /// Writes everything queued while the channel is writable, then flushes once
    /// (``ConnectionOutbound/drain(to:lingerConfigured:)``). A drain that the flush starts (the channel became
    /// writable again within it: the kernel took a part at once) runs after this one, not inside it.
    ///
    /// `everything`: writes all that is queued, writable or not, every part of the frames sent in parts included; for
    /// the moment before a goodbye, which must follow all of it (``ConnectionOutbound/drain(to:lingerConfigured:everything:)``).
    func drain(everything: Bool = false) {
        if draining {
            drainAgain = true
            drainEverything = drainEverything || everything
            return
        }
        draining = true
        drainEverything = everything
        defer { draining = false }
        repeat {
            drainAgain = false
            drainOnce(everything: drainEverything)
        } while drainAgain
    }

    private func drainOnce(everything: Bool) {
        guard let connection else { return }
        guard let context else {
            connection.outbound.endDrain()  // nothing can be written: what is queued stays queued
            return
        }
        let drained = connection.outbound.drain(
            to: ChannelSink(context: context), lingerConfigured: burstLinger > .zero, everything: everything)
        if drained.frames > 0 { dispatcher.metrics.framesOut.increment(by: Int64(drained.frames)) }
        if drained.bytes > 0 { dispatcher.metrics.bytesOut.increment(by: Int64(drained.bytes)) }
        if drained.lingers { lingerThenDrain(context: context, outbound: connection.outbound) }
        if let unsentLimit = drained.unsentLimit { Self.limitUnsentBytes(of: context.channel, to: unsentLimit) }
    }

    /// The channel, as the drain writes to it.
    private struct ChannelSink: OutboundSink {
        let context: ChannelHandlerContext

        var isWritable: Bool { context.channel.isWritable }
        var eventLoop: any EventLoop { context.eventLoop }

        func write(_ chunk: ByteBuffer, promise: EventLoopPromise<Void>?) {
            context.write(NIOAny(chunk), promise: promise)
        }

        func flush() {
            context.flush()
        }
    }

    /// A burst goes on: the next drain runs after the burst linger, and the queue counts it as scheduled meanwhile,
    /// so the senders queue without waking the event loop (``OutboundQueue/lingers(afterWriting:lingerConfigured:)``).
    private func lingerThenDrain(context: ChannelHandlerContext, outbound: ConnectionOutbound) {
        do {
            try context.eventLoop.assumeIsolated().scheduleCallback(in: burstLinger, handler: LingerEnd(handler: self))
        } catch {
            // The event loop is shutting down: nothing is scheduled, so the queue must not count on a drain.
            outbound.lingerNotScheduled()
        }
    }

    /// The end of a burst linger: writes what was queued meanwhile. A callback rather than a task: NIO schedules it
    /// without a promise.
    private struct LingerEnd: NIOScheduledCallbackHandler {
        let handler: PeerChannelHandler

        func handleScheduledCallback(eventLoop: some EventLoop) {
            handler.connection?.outbound.lingerEnded()
            handler.drain()
        }

        func didCancelScheduledCallback(eventLoop: some EventLoop) {
            handler.connection?.outbound.lingerEnded()
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

    /// Starts holding what we queue; `false` when already holding, or closed.
    func startOutboundHold() -> Bool {
        guard context != nil, let connection else { return false }
        return connection.outbound.hold()
    }

    /// Ends an outbound hold: writes what was queued meanwhile.
    func releaseOutboundHold() {
        guard connection?.outbound.releaseHold() == true else { return }
        drain()
    }
}
