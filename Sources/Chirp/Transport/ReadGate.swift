import NIOCore

/// Stops reading from a connection while something downstream is full, so that TCP's own flow control reaches the
/// sender instead of this process buffering whatever it sends.
///
/// Each consumer that is full (a ``MessageSequence`` above its high watermark) closes the gate under its own key;
/// the channel is read again once every key has opened it. What was already read when the gate closed (the frames
/// of the last read, at most one read buffer) is still delivered: nothing is dropped. While the gate is closed the
/// peer's frames stay in its socket and ours, and the sender's outbound queue fills up to its
/// ``Configuration/outboundLimit``.
///
/// Its state is touched on the channel's event loop only; other threads go through ``LoopBoundGate``. An outbound
/// handler only (it sees `read`, nothing inbound), so that what is read does not pass through it.
final class ReadGate: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = ByteBuffer
    // `@exclusivity(unchecked)`: one event loop, no overlapping access; see PeerChannelHandler.

    /// The consumers that asked to stop reading.
    @exclusivity(unchecked) private var closedBy: Set<ObjectIdentifier> = []
    /// Set by ``openForGood()``: the gate no longer closes.
    @exclusivity(unchecked) private var openedForGood = false
    /// Whether a read was asked for (by auto-read, or by another handler) while the gate was closed.
    @exclusivity(unchecked) private var readPending = false
    @exclusivity(unchecked) private var context: ChannelHandlerContext?

    /// Whether some consumer is full and the channel is not being read.
    var isClosed: Bool { !closedBy.isEmpty }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        if readPending {
            readPending = false
            context.read()
        }
    }

    func read(context: ChannelHandlerContext) {
        if closedBy.isEmpty {
            context.read()
        } else {
            readPending = true
        }
    }

    /// Stops reading until ``open(for:)`` with the same key (and every other key that closed it).
    func close(for key: ObjectIdentifier) {
        guard !openedForGood else { return }
        closedBy.insert(key)
    }

    /// Reads from now on, whoever closed the gate or will: for a connection that lost the tie-break, which is closed
    /// a few seconds after it was retired. Left unread, what its peer sent there before switching would be lost with
    /// it; that is bounded by the peer's outbound limit.
    func openForGood() {
        openedForGood = true
        closedBy.removeAll()
        guard readPending, let context else { return }
        readPending = false
        context.read()
    }

    /// Reads again once no other key keeps the gate closed.
    func open(for key: ObjectIdentifier) {
        guard closedBy.remove(key) != nil, closedBy.isEmpty, readPending, let context else { return }
        readPending = false
        context.read()
    }
}

/// A ``ReadGate`` reachable from any thread: every call hops to the gate's event loop. Routing stops and resumes a
/// connection's reads through it (``ReadPause``).
struct LoopBoundGate: ReadPause {
    private let gate: NIOLoopBound<ReadGate>

    init(_ gate: ReadGate, eventLoop: any EventLoop) {
        self.gate = NIOLoopBound(gate, eventLoop: eventLoop)
    }

    /// Stops reading for `key` (on the gate's event loop: at once when called there).
    func close(for key: ObjectIdentifier) {
        perform(.close(key))
    }

    /// Reads again for `key`, when no other key keeps it closed.
    func open(for key: ObjectIdentifier) {
        perform(.open(key))
    }

    /// Reads from now on, whoever closes the gate (``ReadGate/openForGood()``).
    func openForGood() {
        perform(.openForGood)
    }

    private enum Operation: Sendable {
        case close(ObjectIdentifier)
        case open(ObjectIdentifier)
        case openForGood
    }

    /// Carries out `operation` on the gate's event loop: at once when called there.
    private func perform(_ operation: Operation) {
        if gate.eventLoop.inEventLoop {
            Self.perform(operation, on: gate.value)
        } else {
            let gate = self.gate
            gate.eventLoop.execute { Self.perform(operation, on: gate.value) }
        }
    }

    private static func perform(_ operation: Operation, on gate: ReadGate) {
        switch operation {
        case .close(let key): gate.close(for: key)
        case .open(let key): gate.open(for: key)
        case .openForGood: gate.openForGood()
        }
    }
}
