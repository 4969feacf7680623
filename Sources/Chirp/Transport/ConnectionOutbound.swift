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
    /// The time, for the ``PartBudget`` (a test's sink sets it).
    var now: NIODeadline { get }
}

extension OutboundSink {
    var now: NIODeadline { .now() }
}

/// What one connection sends, and the one owner of it: its ``OutboundQueue`` and the drain that writes it; and the
/// connection's one lock, the only state it shares between threads, which guards that queue and the connection's
/// ``ExchangeTickets``.
///
/// Any thread queues (``admit(_:isReply:)``), waits for room (``waitForRoom()``), and keeps its exchanges' tickets
/// (``withTickets(_:)``: request ids, replies owed, waits not registered yet; see ``ExchangeState`` for the rest of an
/// exchange). The tickets sit under the queue's lock so that a reply is counted out in the acquisition that queues it,
/// and a request's or ping's wait registered in the one that queues its frame. The event loop drains
/// (``drain(to:lingerConfigured:)``): it writes every chunk while the channel is writable, flushes once, keeps the
/// memory of what it wrote for the next batch, wakes the senders waiting for room, and says whether the next drain is
/// to wait for the burst linger. Who wakes the loop to drain is the ``PeerConnection`` (it knows the channel handler);
/// the queue says when (``OutboundQueue/drainScheduled``).
struct ConnectionOutbound: Sendable {
    typealias Admission = OutboundQueue.Admission

    /// What the connection's one lock guards.
    struct Locked {
        /// What waits to be written.
        var queue: OutboundQueue
        /// The exchanges' bookkeeping that any thread touches.
        var tickets = ExchangeTickets()
        /// The bytes of parts a drain may write past the channel's writability (the drain's own state).
        var partBudget = PartBudget()
        /// The unsent bound the socket has (``PartBudget/unsentLimit``), as the last ``Drained/unsentLimit`` said;
        /// a connection that sends parts starts with the slow link's (``PeerChannelHandler/limitUnsentBytes(of:to:)``).
        var unsentLimit = PartBudget.slowLinkUnsentLimit
    }

    private let locked: NIOLockedValueBox<Locked>
    /// The channel's allocator, kept here: `Channel.allocator` costs a lookup and a retain, and every send needs it.
    let allocator: ByteBufferAllocator

    /// `splitsFrames`: the peer reassembles parts (``OutboundQueue/splitsFrames``).
    init(limit: Int, allocator: ByteBufferAllocator, splitsFrames: Bool = false) {
        self.locked = NIOLockedValueBox(Locked(queue: OutboundQueue(limit: limit, splitsFrames: splitsFrames)))
        self.allocator = allocator
    }

    // MARK: Queueing (any thread)

    /// Queues a complete frame, and says what became of it and whether the caller is to have the event loop drain (no
    /// drain is scheduled yet: this frame's drain is now counted as scheduled). A reply (`isReply`) is no longer owed
    /// from then on, queued or not (``ExchangeTickets/replyEnded()``).
    func admit(_ frame: ByteBuffer, isReply: Bool) -> (admission: Admission, wakeLoop: Bool) {
        let allocator = self.allocator
        return locked.withLockedValue { locked -> (Admission, Bool) in
            let admission = locked.queue.admit(frame, isReply: isReply, allocator: allocator)
            if isReply { locked.tickets.replyEnded() }
            guard admission == .accepted, !locked.queue.drainScheduled else { return (admission, false) }
            locked.queue.drainScheduled = true
            return (admission, true)
        }
    }

    /// On the loop, the wait of request or ping `id` registered (``ExchangeTickets/waitRegistered(_:)``): queues its
    /// frame (`admit` queues it) unless its task was cancelled before (``ExchangeTickets/waitCancelled(_:)``): then
    /// `nil`, and nothing is queued. The caller drains at once.
    func admitRegistered(
        id: UInt64, _ admit: (inout OutboundQueue, ByteBufferAllocator) -> Admission
    ) -> Admission? {
        let allocator = self.allocator
        return locked.withLockedValue { locked -> Admission? in
            guard locked.tickets.waitRegistered(id) else { return nil }
            return admit(&locked.queue, allocator)
        }
    }

    /// How much of what was queued was handed to the channel (``OutboundQueue/handedOver``).
    var handedOver: HandedOver {
        locked.withLockedValue { $0.queue.handedOver }
    }

    /// Waits until the queue is at most half full, the connection closes, or the task is cancelled; the caller then
    /// submits again.
    ///
    /// The waiter's id is known to the queue before the task can be cancelled, so a cancellation that comes before
    /// the wait is registered is remembered there, and the wait then does not start (``OutboundQueue/wait(_:id:)``).
    func waitForRoom() async {
        let id = locked.withLockedValue { $0.queue.makeWaiterID() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                if !locked.withLockedValue({ $0.queue.wait(continuation, id: id) }) { continuation.resume() }
            }
        } onCancel: {
            locked.withLockedValue { $0.queue.cancelWaiter(id) }?.resume()
        }
    }

    /// Whether a new message of `size` bytes would find the queue full now (``OutboundQueue/isFull(for:)``).
    func isFull(for size: Int) -> Bool {
        locked.withLockedValue { $0.queue.isFull(for: size) }
    }

    /// Memory of a large frame written lately, cleared, with room for `minimumCapacity` bytes (see
    /// ``OutboundQueue/recycleLarge(_:)``).
    func takeSpareLarge(minimumCapacity: Int) -> ByteBuffer? {
        locked.withLockedValue { $0.queue.takeSpareLarge(minimumCapacity: minimumCapacity) }
    }

    /// The anchor a sending thread remembers this connection by (``RouteCache``), made by `make` the first time, or
    /// `nil` when it no longer takes new frames.
    func sendRoute(making make: () -> SendRoute) -> SendRoute? {
        locked.withLockedValue { $0.queue.route(making: make) }
    }

    // MARK: An exchange's tickets (any thread)

    /// Runs `body` on the connection's ``ExchangeTickets``, under the lock, and returns what it returns.
    func withTickets<Result>(_ body: (inout ExchangeTickets) -> Result) -> Result {
        locked.withLockedValue { body(&$0.tickets) }
    }

    // MARK: The connection's life

    /// No new message or request is queued from now on (replies still are).
    func retire() {
        locked.withLockedValue { $0.queue.retire() }
    }

    /// Nothing is queued from now on, and what waits is dropped; senders waiting for room are woken.
    func close() {
        for waiter in locked.withLockedValue({ $0.queue.close() }) { waiter.resume() }
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
        /// The socket's unsent bound is to change to this (``PartBudget/unsentLimit``; 0: the system's default): the
        /// link's measured speed crossed a part per millisecond. `nil`: no change.
        var unsentLimit: Int?
    }

    /// Writes every chunk queued to `sink` while it is writable, then flushes once; then keeps the last batch's memory
    /// for the next one, wakes the senders waiting for room, and says whether the next drain is to wait for the burst
    /// linger (`lingerConfigured`: ``Configuration/burstLinger`` is not zero). A held queue writes nothing and keeps
    /// what it holds. Ends the scheduled drain either way: the next frame queued schedules another.
    ///
    /// `everything`: the connection says goodbye next (it closes, or retired), so whatever is queued is written now,
    /// writable or not, every part of the frames sent in parts included: NIO holds it, and the goodbye written after it
    /// follows it, as a frame sent whole would.
    func drain(to sink: some OutboundSink, lingerConfigured: Bool, everything: Bool = false) -> Drained {
        var lastWritten: ByteBuffer?
        var wroteParts = false
        var bytes = 0
        var partBytes = 0
        var firstPartAt: NIODeadline?
        loop: while true {
            switch nextChunk(
                isWritable: everything || sink.isWritable, partsWritten: lastWritten == nil ? partBytes : 0)
            {
            case .chunk(let chunk):
                bytes += chunk.readableBytes
                if chunk.capacity > 4 * OutboundQueue.coalescedWriteSize {
                    // A large frame: once written, its memory may serve the next one (OutboundQueue.recycleLarge).
                    let promise = sink.eventLoop.makePromise(of: Void.self)
                    let locked = self.locked
                    promise.futureResult.whenSuccess { locked.withLockedValue { $0.queue.recycleLarge(chunk) } }
                    sink.write(chunk, promise: promise)
                } else {
                    sink.write(chunk, promise: nil)
                }
                lastWritten = chunk
            case .part(let part):
                let size = (part.isWhole ? 0 : PartFrame.headerSize) + part.slice.readableBytes
                bytes += size
                if firstPartAt == nil { firstPartAt = sink.now }
                partBytes += size
                write(part, to: sink)
                wroteParts = true
            case .done:
                break loop
            case .held:
                return Drained()
            }
        }
        if lastWritten != nil || wroteParts { sink.flush() }
        // After the flush, which usually hands the bytes to the kernel: NIO has let go of them by then, and the next
        // batch reuses their memory.
        let (waiters, frames, lingers, unsentLimit) = locked.withLockedValue { locked in
            if let lastWritten { locked.queue.recycle(lastWritten) }
            var unsentLimit: Int?
            if let firstPartAt {
                locked.partBudget.drained(partBytes, at: firstPartAt, emptied: !locked.queue.holdsParts)
                if locked.partBudget.unsentLimit != locked.unsentLimit {
                    locked.unsentLimit = locked.partBudget.unsentLimit
                    unsentLimit = locked.unsentLimit
                }
            }
            locked.queue.drainedEmpty()
            let frames = locked.queue.takeFramesQueued()
            return (
                locked.queue.wakeableWaiters(), frames,
                locked.queue.lingers(afterWriting: frames, lingerConfigured: lingerConfigured), unsentLimit
            )
        }
        for waiter in waiters { waiter.resume() }
        return Drained(frames: frames, bytes: bytes, lingers: lingers, unsentLimit: unsentLimit)
    }

    /// Writes a part frame: its header, then its slice of the frame (no copy); or a frame that leaves whole, as it is.
    /// Once the last part is written, the frame's memory may serve the next large one
    /// (``OutboundQueue/recycleLarge(_:)``).
    private func write(_ part: PartScheduler.Part, to sink: some OutboundSink) {
        if !part.isWhole {
            var header = allocator.buffer(capacity: PartFrame.headerSize)
            PartFrame.writeHeader(
                stream: part.stream, flags: part.flags, sliceSize: part.slice.readableBytes, into: &header)
            sink.write(header, promise: nil)
        }
        guard let whole = part.completes, whole.capacity > 4 * OutboundQueue.coalescedWriteSize else {
            sink.write(part.slice, promise: nil)
            return
        }
        let promise = sink.eventLoop.makePromise(of: Void.self)
        let locked = self.locked
        promise.futureResult.whenSuccess { locked.withLockedValue { $0.queue.recycleLarge(whole) } }
        sink.write(part.slice, promise: promise)
    }

    private enum Next {
        case chunk(ByteBuffer)
        /// A part of a frame sent in parts: nothing else waits.
        case part(PartScheduler.Part)
        /// Nothing more to write now (or the sink is not writable): the drain ends, and the next one may be scheduled.
        case done
        /// The queue is held: nothing is written, the drain ends.
        case held
    }

    /// Takes the next chunk to write while `isWritable` and not held; anything else ends the drain (and allows the
    /// next one). `partsWritten`: the bytes of parts this drain wrote when it wrote nothing else; while they are fewer
    /// than the ``PartBudget``, the next part is written even though the channel is not writable.
    private func nextChunk(isWritable: Bool, partsWritten: Int) -> Next {
        locked.withLockedValue { locked in
            if locked.queue.isHeld {
                locked.queue.drainScheduled = false
                return .held
            }
            guard isWritable || (partsWritten > 0 && partsWritten < locked.partBudget.bytes) else {
                locked.queue.drainScheduled = false
                return .done
            }
            if let chunk = locked.queue.nextChunk() { return .chunk(chunk) }
            // A large frame leaves whole where the link carries it within the budget's target, with the parts this
            // drain wrote (PartBudget.wholeFrameBytes).
            let wholeUpTo = locked.partBudget.wholeFrameBytes - partsWritten
            if let part = locked.queue.nextPart(wholeUpTo: wholeUpTo) { return .part(part) }
            locked.queue.drainScheduled = false
            return .done
        }
    }

    /// Ends a scheduled drain that cannot run (the channel is gone): what is queued stays queued.
    func endDrain() {
        locked.withLockedValue { $0.queue.drainScheduled = false }
    }

    /// The burst linger's drain runs now, or was cancelled (``OutboundQueue/lingerEnded()``).
    func lingerEnded() {
        locked.withLockedValue { $0.queue.lingerEnded() }
    }

    /// The burst linger's drain could not be scheduled (``OutboundQueue/lingerNotScheduled()``).
    func lingerNotScheduled() {
        locked.withLockedValue { $0.queue.lingerNotScheduled() }
    }

    /// Holds what is queued until ``releaseHold()``; `false` when held already.
    func hold() -> Bool {
        locked.withLockedValue { $0.queue.hold() }
    }

    /// Ends the hold; `false` when nothing was held. The caller drains.
    @discardableResult
    func releaseHold() -> Bool {
        locked.withLockedValue { $0.queue.releaseHold() }
    }
}
