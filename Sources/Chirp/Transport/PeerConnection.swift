import NIOConcurrencyHelpers
import NIOCore

/// Who opened a connection.
enum ConnectionRole: Sendable {
    /// We dialed the peer.
    case dialer
    /// The peer dialed us.
    case acceptor
}

/// One established (handshaken) connection to a peer: its outbound queue, its pending requests and its pings.
///
/// Any thread may send: frames go into a locked queue, and one task per event-loop tick writes everything queued
/// and flushes once, so a burst of small messages costs few syscalls. The queue is bounded by
/// ``Configuration/outboundLimit``; while the socket is not writable, frames wait in the queue, not in NIO.
final class PeerConnection: @unchecked Sendable {
    let channel: any Channel
    let eventLoop: any EventLoop
    let role: ConnectionRole
    /// The remote hello.
    let remote: Hello
    /// The peer as seen over this connection.
    let peer: Peer
    /// The id of the peer that dialed this connection, used to pick one connection when both dialed.
    let dialerID: String
    /// When the TCP connection was set up (its channel initialized), before the handshake.
    let openedAt: ContinuousClock.Instant
    /// Stops reading from the peer while a consumer of its messages is full.
    let readGate: LoopBoundGate?

    private struct Outbound {
        /// Chunks ready to write, in order: frames over ``PeerConnection/coalescedFrameLimit`` as they were built, and
        /// full batches of small frames.
        var queue = CircularBuffer<ByteBuffer>(initialCapacity: 16)
        /// Small frames queued after the last chunk of `queue`, copied one after the other into one buffer: a burst
        /// of small messages then crosses the pipeline as a few large writes.
        var batch: ByteBuffer?
        /// The last batch handed to NIO. Once NIO has written it, nothing else holds it, and the next batch reuses
        /// its memory (`clear()` allocates only while NIO still holds it).
        var spare: ByteBuffer?
        var queuedBytes = 0
        var drainScheduled = false
        var closed = false
        /// Lost the tie-break: no new messages or requests, but replies owed on it are still sent.
        var retired = false
        /// Requests received on this connection whose reply has not been queued yet.
        var repliesOwed = 0
        var nextRequestID: UInt64 = 1
        /// Senders waiting for room in the queue (``waitForRoom()``), by id.
        var roomWaiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var nextWaiterID: UInt64 = 0

        /// Queues `frame`: copied into the current batch when small, else after it as it is.
        mutating func append(_ frame: ByteBuffer, allocator: ByteBufferAllocator) {
            queuedBytes += frame.readableBytes
            guard frame.readableBytes <= PeerConnection.coalescedFrameLimit else {
                if let open = batch.take() { queue.append(open) }
                queue.append(frame)
                return
            }
            var open = batch.take() ?? newBatch(allocator: allocator)
            open.writeImmutableBuffer(frame)
            if open.readableBytes >= PeerConnection.coalescedWriteSize {
                queue.append(open)
            } else {
                batch = open
            }
        }

        /// An empty batch: the spare one's memory when NIO is done with it.
        private mutating func newBatch(allocator: ByteBufferAllocator) -> ByteBuffer {
            guard var reused = spare.take() else { return allocator.buffer(capacity: PeerConnection.coalescedBatchCapacity) }
            reused.clear()
            return reused
        }

        /// The next chunk to write: the queue's first, then the open batch.
        mutating func nextChunk() -> ByteBuffer? {
            guard let chunk = queue.popFirst() ?? batch.take() else { return nil }
            queuedBytes -= chunk.readableBytes
            return chunk
        }

        /// Takes the waiters to wake: all of them once the queue is at most half full, or closed.
        mutating func wakeableWaiters(limit: Int) -> [CheckedContinuation<Void, Never>] {
            guard !roomWaiters.isEmpty, closed || queuedBytes <= limit / 2 else { return [] }
            defer { roomWaiters = [:] }
            return Array(roomWaiters.values)
        }
    }

    /// What became of a frame handed to ``submit(_:)``.
    enum Admission: Equatable {
        /// Queued; it will be written.
        case accepted
        /// Not queued: the queue is full (``Configuration/outboundLimit``).
        case full
        /// Not queued: the connection is closed.
        case closed
        /// Not queued: the connection lost the tie-break; the peer's other connection takes new frames.
        case retired
    }

    private let outbound = NIOLockedValueBox(Outbound())
    private let outboundLimit: Int
    private let allocator: ByteBufferAllocator

    // Touched on `eventLoop` only.
    private var pendingRequests: [UInt64: EventLoopPromise<ResponseBody>] = [:]
    private var pendingPings: [UInt64: EventLoopPromise<Void>] = [:]
    private var context: ChannelHandlerContext?
    /// Set when this connection lost the tie-break to another connection with the same peer.
    private(set) var retired = false
    /// Set when the peer retired this connection too (its `goodbye(duplicate)` arrived).
    private var peerRetired = false
    /// Set when the peer said goodbye because it is stopping.
    private(set) var peerIsStopping = false
    /// Set once the peer can send nothing more on this connection: its `goodbye(duplicate)` arrived or the channel
    /// closed. Then `inboundFinishedCallbacks` ran.
    private var inboundFinished = false
    private var inboundFinishedCallbacks: [@Sendable () -> Void] = []
    /// Set while frames the peer sends on this connection wait for another connection with the same peer to deliver
    /// what the peer sent on it first (see ``holdInbound(until:)``).
    private(set) var holdsInbound = false
    /// Called on the event loop when the hold ends; the channel handler delivers the frames it held.
    var inboundReleased: (() -> Void)?
    /// Set when the peer refused the connection after we took it for established: its accept policy said no once it
    /// had our hello (we dialed it, and it decides after answering). The reason it gave.
    private(set) var refusal: String?

    init(
        context: ChannelHandlerContext, role: ConnectionRole, remote: Hello, localID: String, addresses: [String], host: String?,
        outboundLimit: Int, openedAt: ContinuousClock.Instant = .now, readGate: LoopBoundGate? = nil
    ) {
        self.readGate = readGate
        self.channel = context.channel
        self.openedAt = openedAt
        self.eventLoop = context.eventLoop
        self.context = context
        self.role = role
        self.remote = remote
        self.dialerID = role == .dialer ? localID : remote.peerID
        self.outboundLimit = outboundLimit
        self.allocator = context.channel.allocator
        self.peer = Peer(id: remote.peerID, name: remote.name, metadata: remote.metadata, host: host, addresses: addresses, isConnected: true)
    }

    // MARK: Sending (any thread)

    /// Queues a complete frame. Returns `false` when it was not queued: the connection is closed or retired, or its
    /// queue is full.
    @discardableResult
    func enqueue(_ frame: ByteBuffer) -> Bool {
        submit(frame) == .accepted
    }

    /// Queues a complete message or request frame, and says what became of it.
    func submit(_ frame: ByteBuffer) -> Admission {
        admit(frame, isReply: false)
    }

    /// Notes that a request arrived on this connection: a retired connection stays open until its reply is sent.
    func owesReply() {
        outbound.withLockedValue { $0.repliesOwed += 1 }
    }

    /// Queues the reply to a request received on this connection (after ``owesReply()``); replies still go out on a
    /// retired connection, where the requester waits for them.
    func sendReply(_ frame: ByteBuffer) {
        if admit(frame, isReply: true) != .accepted {
            outbound.withLockedValue { $0.repliesOwed = max(0, $0.repliesOwed - 1) }
        }
        eventLoop.execute { self.closeIfRetiredAndIdle() }
    }

    private func admit(_ frame: ByteBuffer, isReply: Bool) -> Admission {
        let allocator = self.allocator
        let (admission, schedule) = outbound.withLockedValue { state -> (Admission, Bool) in
            if state.closed { return (.closed, false) }
            if state.retired && !isReply { return (.retired, false) }
            if state.queuedBytes > 0 && state.queuedBytes + frame.readableBytes > outboundLimit { return (.full, false) }
            state.append(frame, allocator: allocator)
            if isReply { state.repliesOwed = max(0, state.repliesOwed - 1) }
            if state.drainScheduled { return (.accepted, false) }
            state.drainScheduled = true
            return (.accepted, true)
        }
        if schedule {
            // Even on the event loop, defer to a task: frames queued in the same tick then share one flush.
            eventLoop.execute { self.drain() }
        }
        return admission
    }

    /// Waits until the outbound queue is at most half full, the connection closes, or the task is cancelled; the
    /// caller then submits again. Half, not "room for one frame": a sender that wakes at every freed byte would
    /// wake once per frame written.
    func waitForRoom() async {
        let id = outbound.withLockedValue { state -> UInt64 in
            state.nextWaiterID += 1
            return state.nextWaiterID
        }
        let limit = outboundLimit
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = outbound.withLockedValue { state -> Bool in
                    if state.closed || state.queuedBytes <= limit / 2 || Task.isCancelled { return true }
                    state.roomWaiters[id] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            outbound.withLockedValue { $0.roomWaiters.removeValue(forKey: id) }?.resume()
        }
    }

    /// A new request id, unique on this connection.
    func makeRequestID() -> UInt64 {
        outbound.withLockedValue { state in
            defer { state.nextRequestID &+= 1 }
            return state.nextRequestID
        }
    }

    /// Sends a request frame (built with `id`) and completes with the response, a timeout, or a disconnect.
    func request(id: UInt64, frame: ByteBuffer, timeout: TimeAmount) -> EventLoopFuture<ResponseBody> {
        let promise = eventLoop.makePromise(of: ResponseBody.self)
        let register: @Sendable () -> Void = {
            self.pendingRequests[id] = promise
            let timer = self.eventLoop.scheduleTask(in: timeout) {
                if let promise = self.pendingRequests.removeValue(forKey: id) { promise.fail(RequestTimeoutError()) }
            }
            promise.futureResult.whenComplete { _ in
                timer.cancel()
                self.closeIfRetiredAndIdle()
            }
        }
        if eventLoop.inEventLoop { register() } else { eventLoop.execute(register) }
        let admission = submit(frame)
        if admission != .accepted {
            eventLoop.execute {
                self.pendingRequests.removeValue(forKey: id)?.fail(Self.error(for: admission))
            }
        }
        return promise.futureResult
    }

    /// Sends a ping with a fresh nonce; completes when the matching pong arrives.
    func ping(timeout: TimeAmount) -> EventLoopFuture<Void> {
        let id = makeRequestID()
        let promise = eventLoop.makePromise(of: Void.self)
        var body = channel.allocator.buffer(capacity: 8)
        body.writeInteger(id)
        let frame = FrameWriter.frame(.ping, body: body, allocator: channel.allocator)
        let register: @Sendable () -> Void = {
            self.pendingPings[id] = promise
            let timer = self.eventLoop.scheduleTask(in: timeout) {
                if let promise = self.pendingPings.removeValue(forKey: id) { promise.fail(RequestTimeoutError()) }
            }
            promise.futureResult.whenComplete { _ in
                timer.cancel()
                self.closeIfRetiredAndIdle()
            }
        }
        if eventLoop.inEventLoop { register() } else { eventLoop.execute(register) }
        let admission = submit(frame)
        if admission != .accepted {
            eventLoop.execute { self.pendingPings.removeValue(forKey: id)?.fail(Self.error(for: admission)) }
        }
        return promise.futureResult
    }

    /// The error a request or ping fails with when its frame was not queued.
    private static func error(for admission: Admission) -> any Error {
        switch admission {
        case .full: return OutboundFullError()
        case .retired: return ConnectionRetiredError()
        case .closed, .accepted: return ConnectionClosedError()
        }
    }

    /// Says goodbye (why, as text) and closes once the goodbye is written.
    func close(goodbye reason: String?) {
        let work: @Sendable () -> Void = {
            guard let context = self.context else { return }
            if let reason {
                self.drain()
                let channel = self.channel
                let frame = FrameWriter.frame(.goodbye, text: reason, allocator: channel.allocator)
                context.writeAndFlush(NIOAny(frame)).whenComplete { _ in channel.close(promise: nil) }
            } else {
                context.close(promise: nil)
            }
        }
        if eventLoop.inEventLoop { work() } else { eventLoop.execute(work) }
    }

    // MARK: Event loop side

    /// Frames up to this size are copied into the current batch when queued (one copy of a hundred bytes costs far
    /// less than a write through the pipeline); larger ones are queued as they are, shared, never copied.
    static let coalescedFrameLimit = 4096
    /// A batch is closed, and queued as one chunk, once it holds this many bytes.
    static let coalescedWriteSize = 64 * 1024

    /// Writes everything queued while the channel is writable, then flushes once.
    func drain() {
        eventLoop.preconditionInEventLoop()
        guard let context else {
            outbound.withLockedValue { $0.drainScheduled = false }
            return
        }
        var wrote = false
        var written: ByteBuffer?  // the last batch written, kept as the spare for the next one
        while true {
            let next: ByteBuffer? = outbound.withLockedValue { state in
                guard context.channel.isWritable, let chunk = state.nextChunk() else {
                    state.drainScheduled = false
                    return nil
                }
                return chunk
            }
            guard let chunk = next else { break }
            context.write(NIOAny(chunk), promise: nil)
            wrote = true
            // Any chunk of a batch's size can serve as the next batch once NIO has written it (copy-on-write keeps a
            // chunk still held elsewhere intact); larger ones are not kept.
            if (Self.coalescedBatchCapacity...(4 * Self.coalescedWriteSize)).contains(chunk.capacity) { written = chunk }
        }
        if wrote { context.flush() }
        // Kept after the flush, which usually hands the bytes to the kernel: NIO has let go of them by then.
        if let written { outbound.withLockedValue { $0.spare = written } }
        let limit = outboundLimit
        for waiter in outbound.withLockedValue({ $0.wakeableWaiters(limit: limit) }) { waiter.resume() }
    }

    /// The capacity a new batch starts with.
    static let coalescedBatchCapacity = 16 * 1024

    /// Marks the connection as losing the tie-break: no new message or request is queued on it, a goodbye tells the
    /// other side, and the channel closes once the other side's goodbye has arrived (so no frame it sent before is
    /// lost) and every exchange in flight on it is over: our requests and pings answered, the replies we owe sent. Or
    /// after 5 s, whatever happens.
    func retire() {
        eventLoop.execute {
            guard !self.retired, let context = self.context else { return }
            self.retired = true
            // Read it to its end whatever a consumer says: it closes within 5 s, and what arrives on it comes first.
            self.readGate?.openForGood()
            self.outbound.withLockedValue { $0.retired = true }
            self.drain()
            let frame = FrameWriter.frame(.goodbye, text: GoodbyeReason.duplicate, allocator: self.channel.allocator)
            context.writeAndFlush(NIOAny(frame), promise: nil)
            let channel = self.channel
            self.eventLoop.scheduleTask(in: .seconds(5)) { channel.close(promise: nil) }
            self.closeIfRetiredAndIdle()
        }
    }

    /// Holds what the peer sends on this connection until `predecessor` has delivered everything the peer sent on it.
    ///
    /// When both peers dial at once, a peer may send on the connection that loses the tie-break before it switches to
    /// the one that wins. The two connections are read independently, so without the hold the first messages sent
    /// on the winner could be handled before the last ones sent on the loser, or at the same time. The peer sends
    /// its `goodbye(duplicate)` on the loser after the last frame it queued there, so the hold ends when that
    /// goodbye arrives, or when the loser closes (at most 5 s after it was retired).
    func holdInbound(until predecessor: PeerConnection) {
        let hold: @Sendable () -> Void = {
            guard !self.holdsInbound, self.context != nil else { return }
            self.holdsInbound = true
            predecessor.whenInboundFinished { self.eventLoop.execute { self.releaseInbound() } }
        }
        if eventLoop.inEventLoop { hold() } else { eventLoop.execute(hold) }
    }

    /// Ends a hold started by ``holdInbound(until:)``: the channel handler delivers what it held, in order.
    func releaseInbound() {
        eventLoop.preconditionInEventLoop()
        guard holdsInbound else { return }
        holdsInbound = false
        inboundReleased?()
    }

    /// Runs `callback` (on this connection's event loop) once the peer can send nothing more on this connection.
    private func whenInboundFinished(_ callback: @escaping @Sendable () -> Void) {
        eventLoop.execute {
            if self.inboundFinished { callback() } else { self.inboundFinishedCallbacks.append(callback) }
        }
    }

    private func finishInbound() {
        eventLoop.preconditionInEventLoop()
        guard !inboundFinished else { return }
        inboundFinished = true
        let callbacks = inboundFinishedCallbacks
        inboundFinishedCallbacks = []
        callbacks.forEach { $0() }
    }

    func completeRequest(_ response: ResponseBody) {
        pendingRequests.removeValue(forKey: response.requestID)?.succeed(response)
    }

    /// Closes a connection both sides retired once nothing is in flight on it (see ``retire()``).
    private func closeIfRetiredAndIdle() {
        eventLoop.preconditionInEventLoop()
        guard retired, peerRetired, let context, pendingRequests.isEmpty, pendingPings.isEmpty,
              outbound.withLockedValue({ $0.repliesOwed == 0 })
        else { return }
        drain()
        context.close(promise: nil)
    }

    func completePing(_ body: ByteBuffer) {
        guard let id = body.getInteger(at: body.readerIndex, as: UInt64.self) else { return }  // heartbeat pong
        pendingPings.removeValue(forKey: id)?.succeed(())
    }

    /// The peer said goodbye.
    ///
    /// For a duplicate: if we retired this connection too, both sides are done with it: close once nothing is in
    /// flight on it. If we did not (the connection that wins the tie-break has not completed on our side yet), keep
    /// using it until that connection arrives: the engine then retires this one, which sends our goodbye. Otherwise
    /// the peer is stopping: close now.
    func receivedGoodbye(reason: String) {
        eventLoop.preconditionInEventLoop()
        guard let context else { return }
        if reason == GoodbyeReason.duplicate {
            peerRetired = true
            finishInbound()
            closeIfRetiredAndIdle()
        } else {
            peerIsStopping = true
            context.close(promise: nil)
        }
    }

    /// The peer refused the connection (a `refuse` frame after its hello): remember why and close.
    func receivedRefusal(reason: String) {
        eventLoop.preconditionInEventLoop()
        guard let context else { return }
        refusal = reason
        outbound.withLockedValue { $0.closed = true }
        context.close(promise: nil)
    }

    /// The channel closed: fail everything that waits on it.
    func closed() {
        eventLoop.preconditionInEventLoop()
        let limit = outboundLimit
        let waiters = outbound.withLockedValue { state in
            state.closed = true
            state.queue.removeAll()
            state.batch = nil
            state.spare = nil
            state.queuedBytes = 0
            return state.wakeableWaiters(limit: limit)
        }
        for waiter in waiters { waiter.resume() }
        context = nil
        inboundReleased = nil
        finishInbound()
        let requests = pendingRequests
        pendingRequests = [:]
        requests.values.forEach { $0.fail(ConnectionClosedError()) }
        let pings = pendingPings
        pendingPings = [:]
        pings.values.forEach { $0.fail(ConnectionClosedError()) }
    }
}

/// Reasons carried by goodbye frames.
enum GoodbyeReason {
    /// The sender is stopping.
    static let stopping = "stopping"
    /// The connection lost the tie-break to another connection between the same two peers.
    static let duplicate = "duplicate"
}

/// The connection closed before the reply arrived.
struct ConnectionClosedError: Error {}
/// No reply within the timeout.
struct RequestTimeoutError: Error {}
/// The outbound queue was full.
struct OutboundFullError: Error {}
/// The connection lost the tie-break before the frame was queued; the peer's other connection takes it.
struct ConnectionRetiredError: Error {}
