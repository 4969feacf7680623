import ChirpSupport
import ChirpTrust
import Logging

extension PeerTable {
    /// A resolved advertisement, as discovery reports it (``DiscoveredService``), reduced to what the table decides on.
    struct Advert: Sendable, Equatable {
        /// The DNS-SD instance name.
        var instanceName: String
        /// The TXT record's `id`; empty when missing.
        var peerID: String
        /// The TXT record's `name`, or the instance name.
        var name: String
        /// The TXT record's `pv`, when given.
        var protocolVersion: String?
        /// The TXT record says `sec=1`.
        var usesSecret: Bool
        /// The TXT record says `sec=id`: the peer uses a device identity.
        var usesIdentity = false
        /// The TXT record's `fp`, when it parses (device-identity mode).
        var fingerprint: Fingerprint? = nil
        /// User metadata: the TXT record without the reserved keys.
        var metadata: [String: String]
        /// The target host name.
        var host: String?
        /// The addresses as `ip:port` (IPv6 in brackets), for ``Peer/addresses``.
        var addresses: [String]
        /// Where to dial: the first IPv4 address (else the first address) and the port.
        var dialAddress: DialAddress?
    }

    /// A host and port to dial.
    struct DialAddress: Sendable, Equatable {
        var host: String
        var port: Int
    }

    /// An established connection, as the table sees it: which it is, who dialed it, when it opened.
    struct Established: Sendable {
        /// The connection.
        var connection: Connection
        /// The peer as its hello describes it, with the connection's remote address.
        var peer: Peer
        /// Whether we dialed it.
        var role: ConnectionRole
        /// The id of the peer that dialed it (ours when we did).
        var dialerID: String
        /// When the TCP connection was set up, before its handshake.
        var openedAt: Instant
    }

    /// How a dial ended without an established connection.
    enum DialFailure: Sendable, Equatable {
        /// The TCP connect or the handshake failed; `connectionRefused` when nothing listens at the address.
        case failed(reason: String?, connectionRefused: Bool)
        /// The peer, or our accept policy, refused: this will not change by itself, so the next dial waits long.
        case refused
    }

    /// What happens to the table.
    enum Event: Sendable {
        /// Our own advertisement is in place (`true`) or gone because the daemon is (`false`).
        case advertised(Bool)
        /// Discovery resolved an instance.
        case found(Advert)
        /// An instance is no longer advertised.
        case lost(instanceName: String)
        /// A dial scheduled by ``Action/scheduleDial(peerID:after:generation:)`` is due.
        case dialDue(peerID: String, generation: UInt64)
        /// A dial we started ended without a connection.
        case dialFailed(peerID: String, DialFailure)
        /// A connection (dialed or accepted) completed its handshake.
        case established(Established)
        /// How long the peer has sent nothing on `connection` (``Action/lookAtQuiet(_:peerID:)``); `nil` when the
        /// connection is closed already.
        case looked(Connection, peerID: String, quietFor: Duration?)
        /// An established connection closed. `peerStopping`: the peer's `goodbye(stopping)` closed it; `refusal`: the
        /// peer refused it right after the hellos (its accept policy), with the reason it gave.
        case closed(Connection, peerID: String, peerStopping: Bool, refusal: String?)
        /// The transceiver stops.
        case stop
    }

    /// What the table asks its owner to do. Carried out in order, after the table's lock is released.
    enum Action: Sendable {
        /// Feed ``Event/dialDue(peerID:generation:)`` back after `delay`.
        case scheduleDial(peerID: String, after: Duration, generation: UInt64)
        /// Dial the peer at `address`; report ``Event/established(_:)`` or ``Event/dialFailed(peerID:_:)``.
        case dial(peerID: String, address: DialAddress, peer: Peer)
        /// Tell users.
        case emit(TransceiverEvent)
        /// Retire the connection that lost the tie-break (a `goodbye(duplicate)`, then a close once nothing is in
        /// flight); with `holding`, the kept connection holds what arrives until the retired one has delivered all.
        case retire(Connection, holding: Connection?)
        /// Write nothing on the first connection until the peer has finished sending on the second: our messages
        /// moved from the second (which lost the tie-break) to the first, and the peer may not know it yet.
        case holdOutbound(Connection, until: Connection)
        /// Say how long the peer has sent nothing on this connection, with ``Event/looked(_:peerID:quietFor:)``: a
        /// second connection arrived that the tie-break would retire, and this one, in use, may be dead.
        case lookAtQuiet(Connection, peerID: String)
        /// Close a connection without a goodbye (it belongs to a run of the peer that has stopped, or it is dead).
        case close(Connection)
        /// Say goodbye (`stopping`) on the connection and close it.
        case closeWithGoodbye(Connection)
        /// The peer advertised as `instanceName` is connected: discovery need not resolve it (``ServiceDiscovery``).
        case instanceConnected(String)
        /// That connection ended: discovery resolves the instance again if it had skipped it.
        case instanceDisconnected(String)
        /// What discovery reported for the instance may be stale (a connection to its peer ended, or a dial failed):
        /// resolve it again, so that the next dial goes where the peer is now (a new address, another interface).
        /// `avoiding`: the addresses (no port) that failed, where that connection went or that dial was headed; an
        /// answer made of them only is taken from another interface the instance is seen on, if any.
        case resolveAgain(String, avoiding: [String])
        /// Log a line (never under a lock).
        case log(Logger.Level, Logger.Message, Logger.Metadata)
    }
}

extension PeerTable {
    /// Why we do not dial a peer whose advertisement says it protects its connections otherwise than we do; nil when
    /// both sides match (open and open, the shared secret on both, device identities on both).
    static func securityMismatch(_ advert: Advert, _ settings: Settings) -> String? {
        let theirs: SecurityMode = advert.usesIdentity ? .identity : advert.usesSecret ? .secret : .open
        let ours: SecurityMode = settings.usesIdentity ? .identity : settings.usesSecret ? .secret : .open
        switch (theirs, ours) {
        case (.identity, .identity):
            guard advert.fingerprint != nil else {
                return "\(advert.name) advertises a device identity without a valid fingerprint: not connecting"
            }
            return nil
        case (.open, .open), (.secret, .secret): return nil
        case (.secret, .open): return "\(advert.name) requires a shared secret: set CHIRP_SECRET or use --secret-file"
        case (.open, .secret): return "\(advert.name) does not use a shared secret, and we do: not connecting"
        case (.identity, _):
            return "\(advert.name) requires a device identity (mutual TLS): use one (chirp --identity NAME)"
        case (.open, .identity): return "\(advert.name) uses no device identity, and we do: not connecting"
        case (.secret, .identity):
            return "\(advert.name) requires a shared secret, and we use a device identity: not connecting"
        }
    }
}

/// How a peer protects its connections, as its advertisement says (``PeerTable/securityMismatch(_:_:)``).
enum SecurityMode { case open, secret, identity }
