import ChirpSupport

/// Whether a request whose connection closed before its reply is sent again: a pure state machine, one per call of
/// ``Transceiver/request(_:to:as:timeout:)``. Events in (the connection closed, saying how far the request got; the
/// peer did not connect again), decisions out; the caller waits for the peer's next connection and sends.
///
/// The rule: a request is sent again once, on the peer's next connection, when that is safe: its frame never reached
/// the socket (``RequestDelivery/notSent``: the peer cannot have run it), or its type is an ``IdempotentRequest``. It
/// is not when the peer said it was stopping (it will not come back), nor a second time. Otherwise it fails, and the
/// reason says what happened: whether it was sent again, and whether the peer may have run it.
struct RequestAttempts: Equatable {
    /// The request's wire type name, for the reason.
    let typeName: String
    /// The request's type is an ``IdempotentRequest``.
    let isIdempotent: Bool
    /// It was sent again already.
    private(set) var retried = false
    /// A frame of it reached the socket: the peer may have run it.
    private(set) var mayHaveRun = false

    init(typeName: String, isIdempotent: Bool) {
        self.typeName = typeName
        self.isIdempotent = isIdempotent
    }

    /// What to do once the connection closed before the reply.
    enum Decision: Equatable {
        /// Wait for the peer's next connection (within what is left of the timeout), and send the request there.
        case retry
        /// Fail, for this reason (``/ChirpSupport/ChirpError/reason``).
        case fail(reason: String)
    }

    /// Why the peer's next connection did not come.
    enum Missed: Equatable {
        /// Not within what was left of the timeout, `seconds`.
        case timedOut(seconds: Double)
        /// The peer is gone: it no longer advertises itself.
        case peerGone
        /// This transceiver stopped.
        case stopped
    }

    /// The connection closed before the reply; `delivery` says whether the request had reached the socket,
    /// `peerStopping` whether the peer said goodbye because it stops.
    mutating func connectionClosed(_ delivery: RequestDelivery, peerStopping: Bool) -> Decision {
        if delivery == .sent { mayHaveRun = true }
        if retried {
            return .fail(reason: "it was sent again on the peer's next connection, which closed too; \(outcome)")
        }
        if peerStopping { return .fail(reason: "the peer is stopping; \(outcome)") }
        if mayHaveRun && !isIdempotent {
            return .fail(reason: "\(outcome); it was not sent again, since \(typeName) is not an IdempotentRequest")
        }
        retried = true
        return .retry
    }

    /// The reason of the failure when the peer's next connection did not come.
    func reconnectionMissed(_ missed: Missed) -> String {
        switch missed {
        case .timedOut(let seconds):
            return "\(outcome); the peer did not connect again within the \(SecondsText.format(seconds)) left"
        case .peerGone: return "\(outcome); the peer is gone (it no longer advertises itself)"
        case .stopped: return "\(outcome); this transceiver stopped"
        }
    }

    /// What became of the request, as the reason says it.
    private var outcome: String {
        mayHaveRun
            ? "the request had been sent, so the peer may have run it" : "the request was not sent, so it did not run"
    }
}
