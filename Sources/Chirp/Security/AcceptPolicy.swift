import ChirpSupport

/// A peer asking to connect, as seen by an ``Configuration/acceptPolicy``.
public struct ConnectionCandidate: Sendable {
    /// The peer as it introduced itself in the handshake (id, name, metadata).
    public var peer: Peer
    /// The remote address, as `address:port`.
    public var address: String
    /// Whether the remote dialed us (`true`) or we dialed it (`false`).
    public var isInbound: Bool
}
