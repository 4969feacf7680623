import ChirpSupport
import ChirpTrust
import ChirpWire
import NIOCore

/// Who opened a connection.
enum ConnectionRole: Sendable {
    /// We dialed the peer.
    case dialer
    /// The peer dialed us.
    case acceptor
}

/// One established (handshaken) connection to a peer, as the rest of Chirp sees it: who is at the other end, and a
/// way to send from any thread.
///
/// Frames go into the connection's ``ConnectionOutbound`` (its queue and the drain that writes it), and one task per
/// event-loop tick has the channel handler drain it. The only state shared between threads is behind the connection's
/// one lock there: the queue, and the ``ExchangeTickets`` of its exchanges (request ids, replies owed, waits not
/// registered yet). Everything else about the connection (its lifecycle, the requests and pings in flight, the hold of
/// what the peer sends across a tie-break switch) is the state of its ``PeerChannelHandler``, touched on the event loop
/// only: the methods here hand it work once (`eventLoop.execute`), never share its fields.
final class PeerConnection: InboundConnection {
    let channel: any Channel
    let eventLoop: any EventLoop
    let role: ConnectionRole
    /// The remote hello.
    let remote: Hello
    /// The peer as seen over this connection.
    let peer: Peer
    /// The fingerprint of the peer's TLS certificate, in device-identity mode.
    let fingerprint: Fingerprint?
    /// The id of the peer that dialed this connection, used to pick one connection when both dialed.
    let dialerID: String
    /// When the TCP connection was set up (its channel initialized), before the handshake.
    let openedAt: ContinuousClock.Instant
    /// Stops reading from the peer while a consumer of its messages is full.
    let readGate: LoopBoundGate?
    /// The same gate as Routing sees it (``InboundConnection/readPause``): made once, not at each message.
    let readPause: (any ReadPause)?
    /// Frames up to this size are copied into the queue's batch when queued (``OutboundQueue/coalescedFrameLimit``).
    var copiedFrameLimit: Int { OutboundQueue.coalescedFrameLimit }

    /// What the connection sends: its queue and the drain.
    let outbound: ConnectionOutbound
    /// The channel's allocator (``ConnectionOutbound/allocator``).
    var allocator: ByteBufferAllocator { outbound.allocator }
    private let handler: NIOLoopBound<PeerChannelHandler>
    /// Has the handler write what is queued: made once, so that scheduling a drain from another thread allocates no
    /// closure (a closure made at each call would be an allocation every few messages a sender sends).
    private let drainTask: @Sendable () -> Void

    init(
        handler: PeerChannelHandler, channel: any Channel, role: ConnectionRole, remote: Hello, localID: String,
        addresses: [String], host: String?, outboundLimit: Int, openedAt: ContinuousClock.Instant = .now,
        readGate: LoopBoundGate? = nil, fingerprint: Fingerprint? = nil
    ) {
        self.fingerprint = fingerprint
        self.readGate = readGate
        self.readPause = readGate
        self.channel = channel
        self.openedAt = openedAt
        self.eventLoop = channel.eventLoop
        self.role = role
        self.remote = remote
        self.dialerID = role == .dialer ? localID : remote.peerID
        self.outbound = ConnectionOutbound(
            limit: outboundLimit, allocator: channel.allocator, splitsFrames: remote.acceptsParts)
        let boundHandler = NIOLoopBound(handler, eventLoop: channel.eventLoop)
        self.handler = boundHandler
        self.drainTask = { boundHandler.value.drain() }
        var peer = Peer(
            id: remote.peerID, name: remote.name, metadata: remote.metadata, host: host, addresses: addresses,
            isConnected: true, role: remote.peerRole)
        peer.fingerprintText = fingerprint?.description
        self.peer = peer
    }

    typealias Admission = OutboundQueue.Admission

    // MARK: Sending (any thread)

    /// Queues a complete message or request frame, and says what became of it.
    func submit(_ frame: ByteBuffer) -> Admission {
        admit(frame, isReply: false)
    }

    /// Notes that a request arrived on this connection: a retired connection stays open until its reply is sent.
    func owesReply() {
        outbound.withTickets { $0.owesReply() }
    }

    /// Queues the reply to a request received on this connection (after ``owesReply()``); replies still go out on a
    /// retired connection, where the requester waits for them. Queued or not, the reply is no longer owed
    /// (``ConnectionOutbound/admit(_:isReply:)``).
    func sendReply(_ frame: ByteBuffer) {
        admit(frame, isReply: true)
        if eventLoop.inEventLoop {
            handler.value.exchangeEnded()  // a synchronous responder's reply: no closure to make
        } else {
            onLoop { $0.exchangeEnded() }
        }
    }

    @discardableResult
    private func admit(_ frame: ByteBuffer, isReply: Bool) -> Admission {
        let (admission, wakeLoop) = outbound.admit(frame, isReply: isReply)
        if wakeLoop {
            if eventLoop.inEventLoop {
                // On the loop (a synchronous responder's reply, a handler that sends): written once the frames that
                // arrived in this read are handled, so that what they queue shares one flush.
                handler.value.drainSoon(on: eventLoop)
            } else {
                eventLoop.execute(drainTask)
            }
        }
        return admission
    }

    /// Queues the frame of request or ping `id` on the event loop (`admit` queues it), right after its wait was
    /// registered, and writes it at once: the caller's one hand-off to the loop carries both. Returns `nil`, having
    /// queued nothing, when the caller's task was cancelled before (``ExchangeTickets/waitCancelled(_:)``).
    private func admitAndDrain(
        id: UInt64, handler: PeerChannelHandler, _ admit: (inout OutboundQueue, ByteBufferAllocator) -> Admission
    ) -> Admission? {
        let admission = outbound.admitRegistered(id: id, admit)
        if admission == .accepted { handler.drain() }
        return admission
    }

    /// Waits until the outbound queue is at most half full, the connection closes, or the task is cancelled; the
    /// caller then submits again (``ConnectionOutbound/waitForRoom()``).
    func waitForRoom() async {
        await outbound.waitForRoom()
    }

    /// A new request id, unique on this connection.
    func makeRequestID() -> UInt64 {
        outbound.withTickets { $0.makeRequestID() }
    }

    /// Sends a request frame (built with `id`) and returns the response; throws at the timeout or a disconnect, and
    /// `CancellationError` as soon as the task is cancelled (``cancelWait(id:isPing:)``).
    ///
    /// One task on the event loop registers the wait, queues the frame and writes it; the response resumes the
    /// caller from there. Until that task has run, the connection counts the request as in flight (a retired
    /// connection does not close under it).
    func request(id: UInt64, frame: ByteBuffer, timeout: TimeAmount) async throws -> ResponseBody {
        try Task.checkCancellation()  // not sent at all
        // Counted before the cancellation handler is installed, so that a cancellation that comes before the event
        // loop registers the wait finds it unregistered (``ExchangeTickets/waitCancelled(_:)``).
        outbound.withTickets { $0.waitStarting() }
        return try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { continuation in
                hopToSendRequest(id: id, frame: frame, timeout: timeout, waiter: .continuation(continuation))
            }
        } onCancel: {
            cancelWait(id: id, isPing: false)
        }
    }

    /// Starts a request whose reply `waiter` takes (internal, not private: the tests wait on a future).
    func startRequest(id: UInt64, frame: ByteBuffer, timeout: TimeAmount, waiter: ExchangeWaiter<ResponseBody>) {
        outbound.withTickets { $0.waitStarting() }
        hopToSendRequest(id: id, frame: frame, timeout: timeout, waiter: waiter)
    }

    /// Has the event loop send the request (after ``ExchangeTickets/waitStarting()``).
    private func hopToSendRequest(
        id: UInt64, frame: ByteBuffer, timeout: TimeAmount, waiter: ExchangeWaiter<ResponseBody>
    ) {
        if eventLoop.inEventLoop {
            sendRequest(id: id, frame: frame, timeout: timeout, waiter: waiter, handler: handler.value)
        } else {
            // One closure for the hop, not a closure for the work wrapped in another for `execute`.
            let handler = self.handler
            eventLoop.execute {
                self.sendRequest(id: id, frame: frame, timeout: timeout, waiter: waiter, handler: handler.value)
            }
        }
    }

    /// On the loop: registers the wait, then queues the frame, notes where it ends in the byte stream (whether it
    /// reached the socket, should the connection close before the reply: ``RequestDelivery``), and writes it.
    private func sendRequest(
        id: UInt64, frame: ByteBuffer, timeout: TimeAmount, waiter: ExchangeWaiter<ResponseBody>,
        handler: PeerChannelHandler
    ) {
        handler.awaitResponse(id: id, waiter: waiter, timeout: timeout, on: eventLoop)
        var frameEnd: UInt64 = .max
        let admission = outbound.admitRegistered(id: id) { queue, allocator in
            let admission = queue.admit(frame, isReply: false, allocator: allocator)
            frameEnd = queue.endMark(ofFrameSized: frame.readableBytes)
            return admission
        }
        guard admission == .accepted else {
            handler.abandonRequest(id: id, error: Self.error(for: admission))
            return
        }
        handler.requestQueued(id: id, through: frameEnd)  // before the write, which may close the channel
        handler.drain()
    }

    /// Sends a ping with a fresh nonce; returns when the matching pong arrives (one task on the event loop, as
    /// ``request(id:frame:timeout:)``), and throws `CancellationError` as soon as the task is cancelled.
    func ping(timeout: TimeAmount) async throws {
        try Task.checkCancellation()  // not sent at all
        let id = outbound.withTickets { $0.pingStarting() }  // before the cancellation handler, as for a request
        try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { continuation in
                hopToSendPing(id: id, timeout: timeout, waiter: .continuation(continuation))
            }
        } onCancel: {
            cancelWait(id: id, isPing: true)
        }
    }

    /// Starts a ping whose pong `waiter` takes (internal, not private: the tests wait on a future).
    func startPing(timeout: TimeAmount, waiter: ExchangeWaiter<Void>) {
        hopToSendPing(id: outbound.withTickets { $0.pingStarting() }, timeout: timeout, waiter: waiter)
    }

    /// Has the event loop send ping `id` (after ``ExchangeTickets/pingStarting()``).
    private func hopToSendPing(id: UInt64, timeout: TimeAmount, waiter: ExchangeWaiter<Void>) {
        if eventLoop.inEventLoop {
            sendPing(id: id, timeout: timeout, waiter: waiter, handler: handler.value)
        } else {
            // One closure for the hop, not a closure for the work wrapped in another for `execute`.
            let handler = self.handler
            eventLoop.execute { self.sendPing(id: id, timeout: timeout, waiter: waiter, handler: handler.value) }
        }
    }

    /// On the loop: registers the wait for the pong, then writes the ping (its 8-byte nonce, `id`) straight into the
    /// queue's batch and the batch to the socket.
    private func sendPing(id: UInt64, timeout: TimeAmount, waiter: ExchangeWaiter<Void>, handler: PeerChannelHandler) {
        handler.awaitPong(id: id, waiter: waiter, timeout: timeout, on: eventLoop)
        let admission = admitAndDrain(id: id, handler: handler) {
            $0.admit(.ping, bodySize: 8, allocator: $1) { $0.writeInteger(id) }
        }
        if admission != .accepted { handler.abandonPing(id: id, error: Self.error(for: admission)) }
    }

    /// The task waiting on request or ping `id` was cancelled: the wait ends with `CancellationError`, and the table
    /// of exchanges forgets it, so that a late answer is ignored as one nobody asked for. A wait the event loop has
    /// not registered yet is failed when it gets to it, without being sent (``ExchangeTickets/waitCancelled(_:)``).
    /// Always through a task on the loop, even from the loop: the handler is never re-entered from whatever code
    /// cancels the task.
    private func cancelWait(id: UInt64, isPing: Bool) {
        outbound.withTickets { $0.waitCancelled(id) }
        let handler = self.handler
        eventLoop.execute {
            if isPing {
                handler.value.abandonPing(id: id, error: CancellationError())
            } else {
                handler.value.abandonRequest(id: id, error: CancellationError())
            }
        }
    }

    /// How many requests and pings of ours wait for their answer on this connection (for tests).
    func exchangesWaiting() async -> Int {
        let handler = self.handler
        return (try? await eventLoop.submit { handler.value.exchangesWaiting }.get()) ?? 0
    }

    /// The error a request or ping fails with when its frame was not queued (`nil`: its task was cancelled).
    private static func error(for admission: Admission?) -> any Error {
        guard let admission else { return CancellationError() }
        switch admission {
        case .full: return OutboundFullError()
        case .retired, .closed: return FrameNotQueuedError()  // not sent: the peer's current connection may take it
        case .accepted: return ConnectionClosedError()
        }
    }

    /// Says goodbye (why, as text) and closes once the goodbye is written; closes at once without a reason.
    func close(goodbye reason: String?) {
        onLoop { $0.close(goodbye: reason) }
    }

    /// This connection lost the tie-break (see ``ConnectionLifecycle``).
    func retire() {
        onLoop { $0.retire() }
    }

    /// Holds what the peer sends on this connection until `predecessor` has delivered everything the peer sent on it.
    ///
    /// When both peers dial at once, a peer may send on the connection that loses the tie-break before it switches to
    /// the one that wins. The two connections are read independently, so without the hold the first messages sent
    /// on the winner could be handled before the last ones sent on the loser, or at the same time. The peer sends
    /// its `goodbye(duplicate)` on the loser after the last frame it queued there, so the hold ends when that
    /// goodbye arrives, or when the loser closes (at most 5 s after it was retired).
    func holdInbound(until predecessor: PeerConnection) {
        onLoop { handler in
            guard handler.startHold() else { return }
            let successor = self
            predecessor.onLoop { $0.whenInboundFinished { successor.onLoop { $0.releaseHold() } } }
        }
    }

    /// Holds what we send on this connection until the peer has finished sending on `predecessor`.
    ///
    /// Our messages move to this connection from `predecessor`, which lost the tie-break. The peer holds what arrives
    /// here until it has read everything we sent there (``holdInbound(until:)``), but only from the moment its own
    /// table knows both connections, and a handshake may complete on its side later than on ours. Its
    /// `goodbye(duplicate)` on `predecessor` says it does: until then what we queue here waits (the queue's limit
    /// applies), and at the latest until `predecessor` closes (5 s after it was retired).
    func holdOutbound(until predecessor: PeerConnection) {
        onLoop { handler in
            guard handler.startOutboundHold() else { return }
            let successor = self
            predecessor.onLoop { $0.whenInboundFinished { successor.onLoop { $0.releaseOutboundHold() } } }
        }
    }

    /// Runs `body` with the channel handler on the event loop: at once when already there, else in a task.
    func onLoop(_ body: @escaping @Sendable (PeerChannelHandler) -> Void) {
        let handler = self.handler
        if eventLoop.inEventLoop {
            body(handler.value)
        } else {
            eventLoop.execute { body(handler.value) }
        }
    }

    /// The anchor a sending thread remembers this connection by (``RouteCache``), or `nil` when it no longer takes
    /// new frames.
    func sendRoute() -> SendRoute? {
        outbound.sendRoute { SendRoute(connection: self) }
    }

    /// Replies owed on this connection, or requests and pings whose wait is not registered yet
    /// (``ExchangeTickets/hasUnfinishedExchanges``).
    var hasUnfinishedExchanges: Bool { outbound.withTickets { $0.hasUnfinishedExchanges } }
}

extension Hello {
    /// The role of the peer this hello introduces.
    var peerRole: Peer.Role { isTool ? .tool : .app }
}

/// The connection closed before the reply arrived.
struct ConnectionClosedError: Error {
    /// Whether the request's frame had reached the socket (pings and handshakes: `.sent`).
    var delivery = RequestDelivery.sent
    /// The peer said it was stopping (its goodbye came before the close): it will not connect again.
    var peerStopping = false
}
/// No reply within the timeout.
struct RequestTimeoutError: Error {}
/// The outbound queue was full.
struct OutboundFullError: Error {}
/// The connection lost the tie-break, or closed, before the frame was queued: nothing was sent, and the connection
/// that carries the peer now (if any) takes it.
struct FrameNotQueuedError: Error {}
