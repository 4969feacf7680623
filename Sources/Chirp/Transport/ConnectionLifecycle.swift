/// The life of one established connection, as a pure state machine: which goodbyes were said, and when it closes.
///
/// Owned by the connection's ``PeerChannelHandler`` and touched on its event loop only. Events come from the frames
/// the peer sends and from the peer table (``retire()``); each returns the actions to carry out, in order.
///
/// A connection that loses the tie-break (Docs/Protocol.md section 6) is *retired*: no new message or request is
/// queued on it, a `goodbye(duplicate)` tells the peer, and it closes once the peer's own `goodbye(duplicate)` has
/// arrived (so nothing the peer sent on it is lost) and no exchange is in flight on it (our requests and pings
/// answered, the replies we owe sent), or 5 s after it was retired, whatever happens.
struct ConnectionLifecycle: Sendable, Equatable {
    enum State: Sendable, Equatable {
        /// In use. `peerRetired`: the peer already sent its `goodbye(duplicate)`; we keep using the connection until
        /// the one that replaces it arrives on our side too.
        case open(peerRetired: Bool)
        /// We lost the tie-break and said so.
        case retired(peerRetired: Bool)
        /// Closing: the peer is stopping or refused us, or both sides are done with a retired connection.
        case closing
        /// The channel closed.
        case closed
    }

    enum Action: Sendable, Equatable {
        /// Queue no new message or request (replies still go out).
        case stopQueueing
        /// Queue nothing more at all.
        case refuseAllFrames
        /// Read the connection to its end whatever a consumer says: what arrives on it must come first.
        case openReadGateForGood
        /// Write what is queued.
        case drain
        /// Write a `goodbye` with this reason.
        case sendGoodbye(String)
        /// Close in 5 s whatever happens.
        case scheduleForcedClose
        /// Write what is queued, then close.
        case close
        /// The peer can send nothing more here: release whatever waited for that.
        case finishInbound
        /// Fail every request and ping in flight.
        case failExchanges
    }

    private(set) var state = State.open(peerRetired: false)
    /// The peer said goodbye because it is stopping.
    private(set) var peerIsStopping = false
    /// The peer refused the connection after its hello (its accept policy), with this reason.
    private(set) var refusal: String?

    /// We lost the tie-break.
    mutating func retire(exchangesInFlight: Bool) -> [Action] {
        guard case .open(let peerRetired) = state else { return [] }
        state = .retired(peerRetired: peerRetired)
        return [
            .stopQueueing, .openReadGateForGood, .drain, .sendGoodbye(GoodbyeReason.duplicate), .scheduleForcedClose
        ]
            + closeIfDone(exchangesInFlight: exchangesInFlight)
    }

    /// The peer said goodbye, for `reason`.
    ///
    /// For a duplicate: if we retired this connection too, both sides are done with it: it closes once nothing is in
    /// flight. If we did not (the connection that wins has not completed on our side yet), it stays in use until
    /// that one arrives and the peer table retires this one. Any other reason: the peer is stopping; close now.
    mutating func receivedGoodbye(reason: String, exchangesInFlight: Bool) -> [Action] {
        switch state {
        case .open(peerRetired: false) where reason == GoodbyeReason.duplicate:
            state = .open(peerRetired: true)
            return [.finishInbound]
        case .retired(peerRetired: false) where reason == GoodbyeReason.duplicate:
            state = .retired(peerRetired: true)
            return [.finishInbound] + closeIfDone(exchangesInFlight: exchangesInFlight)
        case .open, .retired:
            guard reason != GoodbyeReason.duplicate else { return [] }  // said twice
            peerIsStopping = true
            state = .closing
            return [.close]
        case .closing, .closed:
            return []
        }
    }

    /// The peer refused the connection (a `refuse` frame after its hello).
    mutating func receivedRefusal(reason: String) -> [Action] {
        switch state {
        case .open, .retired:
            refusal = reason
            state = .closing
            return [.refuseAllFrames, .close]
        case .closing, .closed:
            return []
        }
    }

    /// An exchange on this connection ended (a reply arrived or was sent, a request or ping timed out).
    mutating func exchangeEnded(exchangesInFlight: Bool) -> [Action] {
        closeIfDone(exchangesInFlight: exchangesInFlight)
    }

    /// The channel closed.
    mutating func channelClosed() -> [Action] {
        guard state != .closed else { return [] }
        state = .closed
        return [.refuseAllFrames, .finishInbound, .failExchanges]
    }

    /// A connection both sides retired closes once nothing is in flight on it.
    private mutating func closeIfDone(exchangesInFlight: Bool) -> [Action] {
        guard state == .retired(peerRetired: true), !exchangesInFlight else { return [] }
        state = .closing
        return [.close]
    }
}

/// Reasons carried by goodbye frames.
enum GoodbyeReason {
    /// The sender is stopping.
    static let stopping = "stopping"
    /// The connection lost the tie-break to another connection between the same two peers.
    static let duplicate = "duplicate"
}
