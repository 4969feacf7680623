import ChirpWire
import NIOCore

/// What waits to be written on one connection, bounded by ``Configuration/outboundLimit``: the frames and batches, the
/// senders waiting for room, the drain's schedule, the burst linger and the hold, and whether the connection still
/// takes frames. A value type.
///
/// Thread rule: any thread, behind the connection's one lock only (``ConnectionOutbound`` holds it there), because any
/// thread may send while the event loop writes. An exchange's bookkeeping (request ids, replies owed, waits not
/// registered yet) is not here but in the ``ExchangeTickets`` beside it under the same lock.
///
/// Small frames (up to ``coalescedFrameLimit``) are copied one after the other into a batch as they are queued, so a
/// burst of small messages crosses the pipeline as a few large writes; the batch reuses the memory of the one written
/// before. Larger frames are queued as they are, shared (a broadcast's frame is the same bytes for every peer).
///
/// When the peer reassembles parts (``Hello/acceptsParts``), frames over ``PartFrame/partSize`` go to the
/// ``PartScheduler`` instead, and leave as part frames only once nothing else waits (``nextPart(wholeUpTo:)``): what
/// is queued after a large frame goes out before the rest of it. On a link that carries such a frame within about a
/// millisecond (``PartBudget/wholeFrameBytes``), it leaves whole: parts would hold nothing up for less.
struct OutboundQueue {
    /// Frames up to this size are copied into the current batch when queued: copying a hundred bytes costs far less
    /// than a write through the pipeline.
    static let coalescedFrameLimit = 4096
    /// A batch is closed, and queued as one chunk, once it holds this many bytes.
    static let coalescedWriteSize = 64 * 1024
    /// The capacity a new batch starts with.
    static let batchCapacity = 16 * 1024

    /// What became of a frame handed to ``admit(_:isReply:allocator:)``.
    enum Admission: Equatable, Sendable {
        /// Queued; it will be written.
        case accepted
        /// Not queued: the queue is full (``Configuration/outboundLimit``).
        case full
        /// Not queued: the connection is closed.
        case closed
        /// Not queued: the connection lost the tie-break; the peer's other connection takes new frames.
        case retired
    }

    let limit: Int
    /// The peer reassembles parts: frames over ``PartFrame/partSize`` are sent in parts.
    let splitsFrames: Bool
    /// The frames sent in parts.
    private var parts = PartScheduler()
    /// Chunks ready to write, in order: frames over the coalescing limit as they were built, and full batches.
    private var queue = CircularBuffer<ByteBuffer>(initialCapacity: 16)
    /// Small frames queued after the last chunk of `queue`.
    private var batch: ByteBuffer?
    /// The last batch handed to NIO. Once NIO has written it, nothing else holds it, and the next batch reuses its
    /// memory (`clear()` allocates only while NIO still holds it).
    private var spare: ByteBuffer?
    /// Large frames NIO has written, kept while a burst of them goes on (see ``recycleLarge(_:)``).
    private var largeSpares: [ByteBuffer] = []
    private(set) var queuedBytes = 0
    /// Where the connection's byte stream stands, for the frames sent whole: the bytes queued since it opened (the
    /// end of the last such frame queued), and how many of them were handed to the channel (``nextChunk()``). A
    /// request whose frame ends past ``handedOverThrough`` when the connection closes was never handed to the socket:
    /// the peer cannot have run it. (Frames sent in parts are counted apart: ``handedOver``.)
    private(set) var queuedThrough: UInt64 = 0
    private(set) var handedOverThrough: UInt64 = 0
    /// A drain task is scheduled on the event loop.
    var drainScheduled = false
    /// What is queued waits before it is written: the connection won a tie-break that moved our messages to it from
    /// the one that lost (``PeerConnection/holdOutbound(until:)``).
    private(set) var isHeld = false
    /// A drain is scheduled after the burst linger (``lingers(afterWriting:lingerConfigured:)``).
    private(set) var lingerPending = false
    /// Frames queued since the last drain took the count (``takeFramesQueued()``), for the metrics.
    private var framesQueued = 0
    /// Nothing more is queued: the connection closed or was refused.
    private(set) var isClosed = false
    /// Lost the tie-break: no new messages or requests, but replies owed on it are still sent.
    private(set) var isRetired = false
    /// Senders waiting for room (``PeerConnection/waitForRoom()``), by id, from the moment they took their id.
    private var roomWaiters: [UInt64: RoomWaiter] = [:]
    private var nextWaiterID: UInt64 = 0
    /// The anchor of the sending threads' remembered routes to this connection (``SendRoute``), while it takes new
    /// frames.
    private var sendRoute: SendRoute?

    /// Where a sender waiting for room is.
    enum RoomWaiter {
        /// It has an id (``makeWaiterID()``) and has not registered its wait yet.
        case starting
        /// Its task was cancelled before it registered: it must not wait.
        case cancelled
        /// It waits, to be resumed.
        case waiting(CheckedContinuation<Void, Never>)
    }

    init(limit: Int, splitsFrames: Bool = false) {
        self.limit = limit
        self.splitsFrames = splitsFrames
    }

    /// Queues a complete frame, or says why not. A reply is queued on a retired connection too.
    mutating func admit(_ frame: ByteBuffer, isReply: Bool, allocator: ByteBufferAllocator) -> Admission {
        if let refusal = refusal(size: frame.readableBytes, isReply: isReply) { return refusal }
        append(frame, allocator: allocator)
        return .accepted
    }

    /// Queues a small frame of `kind` whose body (`bodySize` bytes) `body` writes straight into the current batch:
    /// a frame built where it is queued (a ping, on the event loop) needs no buffer of its own.
    mutating func admit(
        _ kind: FrameKind, bodySize: Int, allocator: ByteBufferAllocator, body: (inout ByteBuffer) -> Void
    ) -> Admission {
        let size = WireFormat.lengthPrefixSize + WireFormat.kindSize + bodySize
        if let refusal = refusal(size: size, isReply: false) { return refusal }
        queuedBytes += size
        queuedThrough += UInt64(size)
        framesQueued += 1
        writeIntoBatch(allocator: allocator) { FrameWriter.write(kind, into: &$0, body: body) }
        return .accepted
    }

    /// Whether a new message of `size` bytes would find the queue full now (``admit(_:isReply:allocator:)`` would say
    /// ``Admission/full``): a sender that would not wait asks before it builds a large frame, so that a full queue does
    /// not cost it a copy of the payload for nothing.
    func isFull(for size: Int) -> Bool {
        refusal(size: size, isReply: false) == .full
    }

    /// Why a frame of `size` bytes cannot be queued now, or `nil` when it can.
    private func refusal(size: Int, isReply: Bool) -> Admission? {
        if isClosed { return .closed }
        if isRetired && !isReply { return .retired }
        if queuedBytes > 0 && queuedBytes + size > limit { return .full }
        return nil
    }

    private mutating func append(_ frame: ByteBuffer, allocator: ByteBufferAllocator) {
        queuedBytes += frame.readableBytes
        framesQueued += 1
        guard frame.readableBytes <= Self.coalescedFrameLimit else {
            if splitsFrames && frame.readableBytes > PartFrame.partSize {
                _ = parts.add(frame)
                return
            }
            queuedThrough += UInt64(frame.readableBytes)
            if let open = batch.take() { queue.append(open) }
            queue.append(frame)
            return
        }
        queuedThrough += UInt64(frame.readableBytes)
        writeIntoBatch(allocator: allocator) { $0.writeImmutableBuffer(frame) }
    }

    /// Has `write` append to the open batch (a new one when none is open), then closes the batch once it is full.
    private mutating func writeIntoBatch(allocator: ByteBufferAllocator, _ write: (inout ByteBuffer) -> Void) {
        var open = batch.take() ?? newBatch(allocator: allocator)
        write(&open)
        if open.readableBytes >= Self.coalescedWriteSize {
            queue.append(open)
        } else {
            batch = open
        }
    }

    /// An empty batch: the spare one's memory when NIO is done with it.
    private mutating func newBatch(allocator: ByteBufferAllocator) -> ByteBuffer {
        guard var reused = spare.take() else { return allocator.buffer(capacity: Self.batchCapacity) }
        reused.clear()
        return reused
    }

    /// The next chunk to write: the queue's first, then the open batch.
    mutating func nextChunk() -> ByteBuffer? {
        guard let chunk = queue.popFirst() ?? batch.take() else { return nil }
        queuedBytes -= chunk.readableBytes
        handedOverThrough += UInt64(chunk.readableBytes)
        return chunk
    }

    /// The next part of a frame sent in parts, once ``nextChunk()`` has nothing left: small frames go first. A frame
    /// of at most `wholeUpTo` bytes whose turn comes before its first part leaves whole
    /// (``PartScheduler/nextPart(wholeUpTo:)``).
    mutating func nextPart(wholeUpTo: Int = 0) -> PartScheduler.Part? {
        guard let part = parts.nextPart(wholeUpTo: wholeUpTo) else { return nil }
        queuedBytes -= part.slice.readableBytes
        return part
    }

    /// Frames sent in parts wait (``PartScheduler``): some of them, at least.
    var holdsParts: Bool { !parts.isEmpty }

    /// The mark of the frame of `size` bytes just queued (``HandedOver``): where it ends among the bytes sent whole,
    /// or its rank among the frames sent in parts.
    func endMark(ofFrameSized size: Int) -> UInt64 {
        guard splitsFrames && size > PartFrame.partSize else { return queuedThrough }
        return HandedOver.partedMark(parts.added)
    }

    /// How much of what was queued was handed to the channel.
    var handedOver: HandedOver { HandedOver(bytes: handedOverThrough, partedFrames: parts.startedThrough) }

    /// Keeps a written chunk's memory for the next batch, when it is of a batch's size (a larger one is let go).
    mutating func recycle(_ written: ByteBuffer) {
        if (Self.batchCapacity...(4 * Self.coalescedWriteSize)).contains(written.capacity) { spare = written }
    }

    /// At most this many written large frames are kept for reuse.
    static let maximumLargeSpares = 4

    /// Keeps a large frame NIO has written (its write completed), so that the next large frame is built in its
    /// memory: only while more is queued (a burst of large sends), and at most ``maximumLargeSpares``; a queue that
    /// empties lets them go (``drainedEmpty()``). A frame another connection also wrote (a broadcast) may be kept
    /// by both: `ByteBuffer`'s copy-on-write then gives the one that writes first memory of its own.
    mutating func recycleLarge(_ written: ByteBuffer) {
        guard queuedBytes > 0, !isClosed, largeSpares.count < Self.maximumLargeSpares,
            written.capacity > 4 * Self.coalescedWriteSize
        else { return }
        largeSpares.append(written)
    }

    /// A kept large frame's memory, cleared, with room for `minimumCapacity` bytes.
    mutating func takeSpareLarge(minimumCapacity: Int) -> ByteBuffer? {
        guard let index = largeSpares.firstIndex(where: { $0.capacity >= minimumCapacity }) else { return nil }
        var spare = largeSpares.remove(at: index)
        spare.clear()
        return spare
    }

    /// The frames queued since the last call.
    mutating func takeFramesQueued() -> Int {
        defer { framesQueued = 0 }
        return framesQueued
    }

    /// A drain found nothing more to write: a burst is over, the large frames kept for it are let go.
    mutating func drainedEmpty() {
        if queuedBytes == 0 { largeSpares.removeAll() }
    }

    /// A drain wrote `frames` frames (those queued since the previous drain): whether the event loop is to write the
    /// next batch after ``Configuration/burstLinger`` instead of being woken by the senders for it. It is when the
    /// frames make a burst (``Configuration/burstFrameCount``), a linger is configured (`lingerConfigured`) and none is
    /// pending, and no drain is scheduled already; the queue then counts the linger's drain as scheduled, so that a
    /// sender queueing meanwhile does not wake the loop. The caller schedules that drain, then calls
    /// ``lingerEnded()`` when it runs (or ``lingerNotScheduled()`` when it cannot be scheduled).
    mutating func lingers(afterWriting frames: Int, lingerConfigured: Bool) -> Bool {
        guard lingerConfigured, !lingerPending, frames >= Configuration.burstFrameCount, !drainScheduled, !isClosed
        else { return false }
        drainScheduled = true
        lingerPending = true
        return true
    }

    /// The linger's drain runs now (or was cancelled): the next burst may linger again.
    mutating func lingerEnded() { lingerPending = false }

    /// The linger's drain could not be scheduled (the event loop is shutting down): nothing counts on it.
    mutating func lingerNotScheduled() {
        lingerPending = false
        drainScheduled = false
    }

    /// Starts holding what is queued (nothing is written until ``releaseHold()``); `false` when held already.
    mutating func hold() -> Bool {
        guard !isHeld else { return false }
        isHeld = true
        return true
    }

    /// Ends the hold; `false` when nothing was held.
    mutating func releaseHold() -> Bool {
        guard isHeld else { return false }
        isHeld = false
        return true
    }

    /// No new message or request from now on (replies still go out).
    mutating func retire() {
        isRetired = true
        sendRoute = nil
    }

    /// The anchor for a sending thread to remember this connection by, made by `make` the first time; `nil` once the
    /// connection retired or closed (the sender looks the peer up each time then).
    mutating func route(making make: () -> SendRoute) -> SendRoute? {
        guard !isClosed, !isRetired else { return nil }
        if let sendRoute { return sendRoute }
        let made = make()
        sendRoute = made
        return made
    }

    /// Nothing more is queued; what waits is dropped (never handed over: ``handedOverThrough`` stays where it is).
    /// Returns the senders to wake.
    mutating func close() -> [CheckedContinuation<Void, Never>] {
        isClosed = true
        sendRoute = nil
        queue.removeAll()
        parts.removeAll()
        batch = nil
        spare = nil
        largeSpares.removeAll()
        queuedBytes = 0
        return wakeableWaiters()
    }

    /// Registers the sender `id` (from ``makeWaiterID()``) as waiting for room; `false` when it must not wait:
    /// there is room already, the queue closed, or its task was cancelled before it got here.
    mutating func wait(_ continuation: CheckedContinuation<Void, Never>, id: UInt64) -> Bool {
        guard case .starting = roomWaiters[id], !isClosed, queuedBytes > limit / 2 else {
            roomWaiters[id] = nil
            return false
        }
        roomWaiters[id] = .waiting(continuation)
        return true
    }

    /// An id for ``wait(_:id:)``, known from now on: a cancellation that comes before the wait is remembered.
    mutating func makeWaiterID() -> UInt64 {
        nextWaiterID += 1
        roomWaiters[nextWaiterID] = .starting
        return nextWaiterID
    }

    /// The task of waiter `id` was cancelled: returns its continuation to resume when it waits; remembers the
    /// cancellation when it has not registered yet; nothing when it was woken already.
    mutating func cancelWaiter(_ id: UInt64) -> CheckedContinuation<Void, Never>? {
        switch roomWaiters[id] {
        case .starting:
            roomWaiters[id] = .cancelled
            return nil
        case .waiting(let continuation):
            roomWaiters[id] = nil
            return continuation
        case .cancelled, nil:
            return nil
        }
    }

    /// Takes the waiters to wake: all of them once the queue is at most half full, or closed. Half, not "room for
    /// one frame": a sender that woke at every freed byte would wake once per frame written. (Senders still on
    /// their way to ``wait(_:id:)`` see the room, or the close, there.)
    mutating func wakeableWaiters() -> [CheckedContinuation<Void, Never>] {
        guard !roomWaiters.isEmpty, isClosed || queuedBytes <= limit / 2 else { return [] }
        var woken: [CheckedContinuation<Void, Never>] = []
        for (id, waiter) in roomWaiters {
            guard case .waiting(let continuation) = waiter else { continue }
            woken.append(continuation)
            roomWaiters[id] = nil
        }
        return woken
    }
}
