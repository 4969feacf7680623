import ChirpWire
import NIOCore

/// The writing of what the connection's ``OutboundQueue`` holds: the drain (every chunk while the channel is writable,
/// one flush), the burst linger, and the hold of what we queue across a tie-break switch.
extension PeerChannelHandler {
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
}
