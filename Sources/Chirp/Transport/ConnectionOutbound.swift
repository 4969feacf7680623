import ChirpWire
import NIOConcurrencyHelpers
import NIOCore

/// Where a drain writes: the channel, for ``PeerChannelHandler`` (its context); a recorder, in tests.
protocol OutboundSink {
    /// Whether the channel takes more now; the drain stops when it does not, and goes on when it does again.
    var isWritable: Bool { get }
    /// The loop of the writes, whose promises say when a large frame was written.
    var eventLoop: any EventLoop { get }
    func write(_ chunk: ByteBuffer, promise: EventLoopPromise<Void>?)
    func flush()
}

/// What one connection sends, and the one owner of it: its ``OutboundQueue`` (a value, behind the lock that is the only
/// state the connection shares between threads) and the drain that writes it.
///
/// Any thread queues (``admit(_:isReply:)``), waits for room (``waitForRoom()``), and counts its exchanges' tickets
/// here (request ids, replies owed, waits not registered yet: see ``ExchangeState`` for the rest of an exchange). The
/// event loop drains (``drain(to:lingerConfigured:)``): it writes every chunk while the channel is writable, flushes
/// once, keeps the memory of what it wrote for the next batch, wakes the senders waiting for room, and says whether the
/// next drain is to wait for the burst linger. Who wakes the loop to drain is the ``PeerConnection`` (it knows the
/// channel handler); the queue says when (``OutboundQueue/drainScheduled``).
struct ConnectionOutbound: Sendable {
    typealias Admission = OutboundQueue.Admission

    private let queue: NIOLockedValueBox<OutboundQueue>
    /// The channel's allocator, kept here: `Channel.allocator` costs a lookup and a retain, and every send needs it.
    let allocator: ByteBufferAllocator

    init(limit: Int, allocator: ByteBufferAllocator) {
        self.queue = NIOLockedValueBox(OutboundQueue(limit: limit))
        self.allocator = allocator
    }

    // MARK: Queueing (any thread)

    /// Queues a complete frame, and says what became of it and whether the caller is to have the event loop drain (no
    /// drain is scheduled yet: this frame's drain is now counted as scheduled).
    func admit(_ frame: ByteBuffer, isReply: Bool) -> (admission: Admission, wakeLoop: Bool) {
        let allocator = self.allocator
        return queue.withLockedValue { queue -> (Admission, Bool) in
            let admission = queue.admit(frame, isReply: isReply, allocator: allocator)
            guard admission == .accepted, !queue.drainScheduled else { return (admission, false) }
            queue.drainScheduled = true
            return (admission, true)
        }
    }

    /// On the loop, the wait of request or ping `id` registered: queues its frame (`admit` queues it) unless its task
    /// was cancelled before (``OutboundQueue/waitCancelled(_:)``): then `nil`, and nothing is queued. The caller
    /// drains at once.
    func admitRegistered(
        id: UInt64, _ admit: (inout OutboundQueue, ByteBufferAllocator) -> Admission
    ) -> Admission? {
        let allocator = self.allocator
        return queue.withLockedValue { queue -> Admission? in
            guard queue.waitRegistered(id) else { return nil }
            return admit(&queue, allocator)
        }
    }

    /// Waits until the queue is at most half full, the connection closes, or the task is cancelled; the caller then
    /// submits again.
    ///
    /// The waiter's id is known to the queue before the task can be cancelled, so a cancellation that comes before
    /// the wait is registered is remembered there, and the wait then does not start (``OutboundQueue/wait(_:id:)``).
    func waitForRoom() async {
        let id = queue.withLockedValue { $0.makeWaiterID() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                if !queue.withLockedValue({ $0.wait(continuation, id: id) }) { continuation.resume() }
            }
        } onCancel: {
            queue.withLockedValue { $0.cancelWaiter(id) }?.resume()
        }
    }

    /// Memory of a large frame written lately, cleared, with room for `minimumCapacity` bytes (see
    /// ``OutboundQueue/recycleLarge(_:)``).
    func takeSpareLarge(minimumCapacity: Int) -> ByteBuffer? {
        queue.withLockedValue { $0.takeSpareLarge(minimumCapacity: minimumCapacity) }
    }

    /// The anchor a sending thread remembers this connection by (``RouteCache``), made by `make` the first time, or
    /// `nil` when it no longer takes new frames.
    func sendRoute(making make: () -> SendRoute) -> SendRoute? {
        queue.withLockedValue { $0.route(making: make) }
    }

    // MARK: An exchange's tickets (any thread)

    /// A new request id, unique on this connection.
    func makeRequestID() -> UInt64 {
        queue.withLockedValue { $0.makeRequestID() }
    }

    /// A request or ping is about to be queued from another thread (``OutboundQueue/waitStarting()``).
    func waitStarting() {
        queue.withLockedValue { $0.waitStarting() }
    }

    /// A new ping's id (its nonce), counted as a wait not registered yet.
    func startingPing() -> UInt64 {
        queue.withLockedValue { queue in
            queue.waitStarting()
            return queue.makeRequestID()
        }
    }

    /// The task of request or ping `id` was cancelled (``OutboundQueue/waitCancelled(_:)``).
    func waitCancelled(_ id: UInt64) {
        queue.withLockedValue { $0.waitCancelled(id) }
    }

    /// A request arrived: a retired connection stays open until its reply is queued.
    func owesReply() {
        queue.withLockedValue { $0.owesReply() }
    }

    /// A reply owed could not be queued (the connection closed).
    func replyDropped() {
        queue.withLockedValue { $0.replyDropped() }
    }

    /// Replies owed, or requests and pings whose wait is not registered yet.
    var hasUnfinishedExchanges: Bool { queue.withLockedValue { $0.hasUnfinishedExchanges } }

    // MARK: The connection's life

    /// No new message or request is queued from now on (replies still are).
    func retire() {
        queue.withLockedValue { $0.retire() }
    }

    /// Nothing is queued from now on, and what waits is dropped; senders waiting for room are woken.
    func close() {
        for waiter in queue.withLockedValue({ $0.close() }) { waiter.resume() }
    }

    // MARK: The drain (the event loop)

    /// What a drain wrote.
    struct Drained: Equatable {
        /// Frames queued since the previous drain (for the metrics).
        var frames = 0
        /// Bytes written.
        var bytes = 0
        /// The next drain is to run after the burst linger (``OutboundQueue/lingers(afterWriting:lingerConfigured:)``):
        /// the caller schedules it, then calls ``lingerEnded()`` (or ``lingerNotScheduled()``).
        var lingers = false
    }

    /// Writes every chunk queued to `sink` while it is writable, then flushes once; then keeps the last batch's memory
    /// for the next one, wakes the senders waiting for room, and says whether the next drain is to wait for the burst
    /// linger (`lingerConfigured`: ``Configuration/burstLinger`` is not zero). A held queue writes nothing and keeps
    /// what it holds. Ends the scheduled drain either way: the next frame queued schedules another.
    func drain(to sink: some OutboundSink, lingerConfigured: Bool) -> Drained {
        var lastWritten: ByteBuffer?
        var bytes = 0
        loop: while true {
            switch nextChunk(isWritable: sink.isWritable) {
            case .chunk(let chunk):
                bytes += chunk.readableBytes
                if chunk.capacity > 4 * OutboundQueue.coalescedWriteSize {
                    // A large frame: once written, its memory may serve the next one (OutboundQueue.recycleLarge).
                    let promise = sink.eventLoop.makePromise(of: Void.self)
                    let queue = self.queue
                    promise.futureResult.whenSuccess { queue.withLockedValue { $0.recycleLarge(chunk) } }
                    sink.write(chunk, promise: promise)
                } else {
                    sink.write(chunk, promise: nil)
                }
                lastWritten = chunk
            case .done:
                break loop
            case .held:
                return Drained()
            }
        }
        if lastWritten != nil { sink.flush() }
        // After the flush, which usually hands the bytes to the kernel: NIO has let go of them by then, and the next
        // batch reuses their memory.
        let (waiters, frames, lingers) = queue.withLockedValue { queue in
            if let lastWritten { queue.recycle(lastWritten) }
            queue.drainedEmpty()
            let frames = queue.takeFramesQueued()
            return (
                queue.wakeableWaiters(), frames, queue.lingers(afterWriting: frames, lingerConfigured: lingerConfigured)
            )
        }
        for waiter in waiters { waiter.resume() }
        return Drained(frames: frames, bytes: bytes, lingers: lingers)
    }

    private enum Next {
        case chunk(ByteBuffer)
        /// Nothing more to write now (or the sink is not writable): the drain ends, and the next one may be scheduled.
        case done
        /// The queue is held: nothing is written, the drain ends.
        case held
    }

    /// Takes the next chunk to write while `isWritable` and not held; anything else ends the drain (and allows the
    /// next one).
    private func nextChunk(isWritable: Bool) -> Next {
        queue.withLockedValue { queue in
            if queue.isHeld {
                queue.drainScheduled = false
                return .held
            }
            guard isWritable, let chunk = queue.nextChunk() else {
                queue.drainScheduled = false
                return .done
            }
            return .chunk(chunk)
        }
    }

    /// Ends a scheduled drain that cannot run (the channel is gone): what is queued stays queued.
    func endDrain() {
        queue.withLockedValue { $0.drainScheduled = false }
    }

    /// The burst linger's drain runs now, or was cancelled (``OutboundQueue/lingerEnded()``).
    func lingerEnded() {
        queue.withLockedValue { $0.lingerEnded() }
    }

    /// The burst linger's drain could not be scheduled (``OutboundQueue/lingerNotScheduled()``).
    func lingerNotScheduled() {
        queue.withLockedValue { $0.lingerNotScheduled() }
    }

    /// Holds what is queued until ``releaseHold()``; `false` when held already.
    func hold() -> Bool {
        queue.withLockedValue { $0.hold() }
    }

    /// Ends the hold; `false` when nothing was held. The caller drains.
    @discardableResult
    func releaseHold() -> Bool {
        queue.withLockedValue { $0.releaseHold() }
    }
}
