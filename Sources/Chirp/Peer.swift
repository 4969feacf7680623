/// Another process on the network that joined the same service type.
///
/// Two `Peer` values are equal when they have the same ``id``, whatever their other properties say: a peer's name or
/// addresses may change while it stays the same peer.
public struct Peer: Sendable, Hashable, Identifiable, CustomStringConvertible {
    /// The fields, in one immutable box. A `Peer` goes with every message a handler receives (its `sender`), so it is
    /// copied a few times per message: one reference costs one retain and one release per copy, where the five
    /// strings and collections it holds cost five of each. A setter makes a new box; peers are rarely changed.
    private final class Fields: Sendable {
        let id: String
        let name: String
        let metadata: [String: String]
        let host: String?
        let addresses: [String]
        let isConnected: Bool

        init(
            id: String, name: String, metadata: [String: String], host: String?, addresses: [String],
            isConnected: Bool
        ) {
            self.id = id
            self.name = name
            self.metadata = metadata
            self.host = host
            self.addresses = addresses
            self.isConnected = isConnected
        }

        func with(
            name: String? = nil, metadata: [String: String]? = nil, host: String?? = nil, addresses: [String]? = nil,
            isConnected: Bool? = nil
        ) -> Fields {
            Fields(
                id: id, name: name ?? self.name, metadata: metadata ?? self.metadata, host: host ?? self.host,
                addresses: addresses ?? self.addresses, isConnected: isConnected ?? self.isConnected)
        }
    }

    private var fields: Fields

    /// The peer's stable identifier (its ``Configuration/peerID``).
    public var id: String { fields.id }

    /// The display name the peer chose (its ``Configuration/peerName``).
    public var name: String {
        get { fields.name }
        set { fields = fields.with(name: newValue) }
    }

    /// The metadata the peer published.
    public var metadata: [String: String] {
        get { fields.metadata }
        set { fields = fields.with(metadata: newValue) }
    }

    /// The host name it advertised (e.g. `myhost.local.`), if it was discovered through DNS-SD.
    public var host: String? {
        get { fields.host }
        set { fields = fields.with(host: .some(newValue)) }
    }

    /// The addresses it can be reached at, as `address:port` text.
    public var addresses: [String] {
        get { fields.addresses }
        set { fields = fields.with(addresses: newValue) }
    }

    /// Whether a connection to the peer is currently established.
    public var isConnected: Bool {
        get { fields.isConnected }
        set { fields = fields.with(isConnected: newValue) }
    }

    /// Creates a peer value.
    public init(
        id: String, name: String, metadata: [String: String] = [:], host: String? = nil, addresses: [String] = [],
        isConnected: Bool = false
    ) {
        fields = Fields(
            id: id, name: name, metadata: metadata, host: host, addresses: addresses, isConnected: isConnected)
    }

    public static func == (lhs: Peer, rhs: Peer) -> Bool { lhs.fields === rhs.fields || lhs.id == rhs.id }
    public func hash(into hasher: inout Hasher) { hasher.combine(id) }

    /// The name and the first 8 characters of the id, `alice (8C0E7F0B)`, with control characters escaped: a peer
    /// chooses its own name and id, and this text ends up in logs and on terminals.
    public var description: String { UntrustedText.escaped("\(name) (\(id.prefix(8)))") }
}
