/// Another process on the network that joined the same service type.
///
/// Two `Peer` values are equal when they have the same ``id``, whatever their other properties say: a peer's name or
/// addresses may change while it stays the same peer.
public struct Peer: Sendable, Hashable, Identifiable, CustomStringConvertible {
    /// The peer's stable identifier (its ``Configuration/peerID``).
    public let id: String
    /// The display name the peer chose (its ``Configuration/peerName``).
    public var name: String
    /// The metadata the peer published.
    public var metadata: [String: String]
    /// The host name it advertised (e.g. `myhost.local.`), if it was discovered through DNS-SD.
    public var host: String?
    /// The addresses it can be reached at, as `address:port` text.
    public var addresses: [String]
    /// Whether a connection to the peer is currently established.
    public var isConnected: Bool

    /// Creates a peer value.
    public init(
        id: String, name: String, metadata: [String: String] = [:], host: String? = nil, addresses: [String] = [],
        isConnected: Bool = false
    ) {
        self.id = id
        self.name = name
        self.metadata = metadata
        self.host = host
        self.addresses = addresses
        self.isConnected = isConnected
    }

    public static func == (lhs: Peer, rhs: Peer) -> Bool { lhs.id == rhs.id }
    public func hash(into hasher: inout Hasher) { hasher.combine(id) }

    /// The name and the first 8 characters of the id, `alice (8C0E7F0B)`, with control characters escaped: a peer
    /// chooses its own name and id, and this text ends up in logs and on terminals.
    public var description: String { UntrustedText.escaped("\(name) (\(id.prefix(8)))") }
}
