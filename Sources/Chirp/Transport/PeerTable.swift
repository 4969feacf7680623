import NIOCore

/// What the engine knows about one remote peer. A value type: the engine keeps them in a locked dictionary.
struct PeerEntry {
    /// The latest description of the peer (from its TXT record or its hello).
    var peer: Peer
    /// DNS-SD instance names under which it is currently advertised.
    var instances: Set<String> = []
    /// Where to dial it, from discovery.
    var dialAddress: (host: String, port: Int)?
    /// The connection in use, if any.
    var connection: PeerConnection?
    /// When that connection was established (for backoff decisions).
    var connectedAt: NIODeadline?
    /// A dial is in flight.
    var dialing = false
    /// A dial is scheduled.
    var scheduledDial: Scheduled<Void>?
    /// Failed attempts in a row, for backoff.
    var failures = 0
    /// The peer said it is stopping: do not redial until it is advertised again.
    var stopping = false
    /// The last dial was refused (nothing listens at the advertised port): the advertisement is stale, left by a
    /// process that died. Such a peer is hidden from the available peers until a connection succeeds.
    var refused = false

    /// Why we do not dial this peer: one of us uses a shared secret and the other does not.
    var securityMismatch: String?

    /// Failures counted after a refusal (wrong secret, accept policy): the next dial waits about 6 s, then longer.
    static let refusalFailures = 7

    /// Whether users see this peer among the available peers.
    var isVisible: Bool { connection != nil || !refused }

    var isAdvertised: Bool { !instances.isEmpty }

    /// The public view, with `isConnected` filled in.
    var snapshot: Peer {
        var peer = self.peer
        peer.isConnected = connection != nil
        if let connection { peer.addresses = peer.addresses.isEmpty ? connection.peer.addresses : peer.addresses }
        return peer
    }

    /// Delay before the next dial: exponential backoff from 0.1 s up to 30 s.
    var backoff: TimeAmount {
        failures == 0 ? .zero : .milliseconds(Int64(min(100 * (1 << min(failures - 1, 9)), 30_000)))
    }
}

/// Picks, from two connections between the same two peers, the one both sides keep: the one dialed by the peer with
/// the smaller id. Both ends compute the same answer without talking.
enum TieBreak {
    static func keepsNew(existing: PeerConnection, new: PeerConnection, localID: String) -> Bool {
        let preferredDialer = min(localID, new.remote.peerID)
        if existing.dialerID == new.dialerID {
            // Same dialer twice: the peer reconnected while we still held a stale connection. The new one is live.
            return true
        }
        return new.dialerID == preferredDialer
    }
}
