import ChirpSupport

/// What the peer table knows about one remote peer.
struct PeerEntry<Connection: Hashable & Sendable, Instant: InstantProtocol>: Sendable
where Instant.Duration == Duration {
    /// The connection in use, with what the table needs of it.
    struct Slot: Sendable {
        var connection: Connection
        var dialerID: String
        /// The peer as seen over the connection (its remote address).
        var peer: Peer
        /// When it was established (for the backoff after a short-lived connection).
        var connectedAt: Instant
        /// When this connection became the one in use (``connectedAt`` carries over a switch; this does not).
        var inUseSince: Instant
    }

    /// The latest description of the peer (from its TXT record or its hello).
    var peer: Peer
    /// DNS-SD instance names under which it is currently advertised.
    var instances: Set<String> = []
    /// Where to dial it, from discovery.
    var dialAddress: PeerTable<Connection, Instant>.DialAddress?
    /// The connection in use, if any.
    var slot: Slot?
    /// A second connection the tie-break would retire, waiting while the table learns whether the one in use is still
    /// alive (``PeerTable/Action/lookAtQuiet(_:peerID:)``).
    var challenger: PeerTable<Connection, Instant>.Established?
    /// A dial is in flight.
    var dialing = false
    /// Discovery was asked to resolve the peer again after a failure (its connection ended, a dial found nobody): the
    /// next dial waits for the answer, up to ``PeerTable/Settings/answerWait``, rather than go where it failed.
    var awaitingAnswer = false
    /// The generation of the dial scheduled last, while it is pending; a due dial of another generation is stale.
    var scheduledDial: UInt64?
    /// Failed attempts in a row, for backoff.
    var failures = 0
    /// The peer said it is stopping: do not redial until it is advertised again.
    var stopping = false
    /// The last dial was refused (nothing listens at the advertised port): the advertisement is stale, left by a
    /// process that died. Such a peer is hidden from the available peers until a connection succeeds.
    var refused = false
    /// Why we do not dial this peer: one of us uses a shared secret and the other does not.
    var securityMismatch: String?

    /// Failures counted after a refusal (wrong secret, accept policy): the next dial waits ``Backoff/dial``'s 7th
    /// delay, 6.4 s times the jitter (3.2 to 9.6 s); a dial refused before the hellos counts one more (twice that),
    /// and each failure after doubles it, up to 30 s.
    static var refusalFailures: Int { 7 }

    init(peer: Peer) {
        self.peer = peer
    }

    /// Whether users see this peer among the available peers.
    var isVisible: Bool { slot != nil || !refused }

    var isAdvertised: Bool { !instances.isEmpty }

    /// The public view, with `isConnected` filled in.
    var snapshot: Peer {
        var peer = self.peer
        peer.isConnected = slot != nil
        if let slot, peer.addresses.isEmpty { peer.addresses = slot.peer.addresses }
        return peer
    }

    /// Delay before the next dial (``Backoff/dial``), with the random `factor`: none before a failure.
    func backoff(factor: Double) -> Duration {
        failures == 0 ? .zero : Backoff.dial.duration(attempt: failures - 1, factor: factor)
    }
}

/// Picks, from two connections between the same two peers, the one both sides keep: the one dialed by the peer with
/// the smaller id. Both ends compute the same answer without talking.
enum TieBreak {
    /// Whether a new connection dialed by `newDialer` replaces an existing one dialed by `existingDialer`.
    static func keepsNew(existingDialer: String, newDialer: String, localID: String, remoteID: String) -> Bool {
        if existingDialer == newDialer {
            // Same dialer twice: the peer reconnected while we still held a stale connection. The new one is live.
            return true
        }
        return newDialer == min(localID, remoteID)
    }
}
