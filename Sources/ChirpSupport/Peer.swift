/// Another process on the network that joined the same service type.
///
/// Two `Peer` values are equal when they have the same ``id``, whatever their other properties say: a peer's name or
/// addresses may change while it stays the same peer.
public struct Peer: Sendable, Hashable, Identifiable, CustomStringConvertible {
    /// The fields, in one immutable box. A `Peer` goes with every message a handler receives (its `sender`), so it is
    /// copied a few times per message: one reference costs one retain and one release per copy, where the five
    /// strings and collections it holds cost five of each. A setter makes a new box; peers are rarely changed.
    private struct Fields: Sendable {
        var id: String
        var name: String
        var metadata: [String: String]
        var host: String?
        var addresses: [String]
        var isConnected: Bool
    }

    private final class Box: Sendable {
        let fields: Fields
        init(_ fields: Fields) { self.fields = fields }
    }

    private var box: Box

    /// Replaces the box with one whose fields `change` made.
    private mutating func update(_ change: (inout Fields) -> Void) {
        var fields = box.fields
        change(&fields)
        box = Box(fields)
    }

    /// The peer's stable identifier (its ``Configuration/peerID``).
    public var id: String { box.fields.id }

    /// The display name the peer chose (its ``Configuration/peerName``).
    public var name: String {
        get { box.fields.name }
        set { update { $0.name = newValue } }
    }

    /// The metadata the peer published.
    public var metadata: [String: String] {
        get { box.fields.metadata }
        set { update { $0.metadata = newValue } }
    }

    /// The host name it advertised (e.g. `myhost.local.`), if it was discovered through DNS-SD.
    public var host: String? {
        get { box.fields.host }
        set { update { $0.host = newValue } }
    }

    /// The addresses it can be reached at, as `address:port` text.
    public var addresses: [String] {
        get { box.fields.addresses }
        set { update { $0.addresses = newValue } }
    }

    /// Whether a connection to the peer is currently established.
    public var isConnected: Bool {
        get { box.fields.isConnected }
        set { update { $0.isConnected = newValue } }
    }

    /// Creates a peer value.
    public init(
        id: String, name: String, metadata: [String: String] = [:], host: String? = nil, addresses: [String] = [],
        isConnected: Bool = false
    ) {
        box = Box(
            Fields(id: id, name: name, metadata: metadata, host: host, addresses: addresses, isConnected: isConnected))
    }

    public static func == (lhs: Peer, rhs: Peer) -> Bool { lhs.box === rhs.box || lhs.id == rhs.id }
    public func hash(into hasher: inout Hasher) { hasher.combine(id) }

    /// The name and the first 8 characters of the id, `alice (8C0E7F0B)`, with control characters escaped: a peer
    /// chooses its own name and id, and this text ends up in logs and on terminals.
    public var description: String { UntrustedText.escaped("\(name) (\(id.prefix(8)))") }
}
