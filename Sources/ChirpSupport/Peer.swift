/// Another process on the network that joined the same service type.
///
/// A `Peer` is a value you read: Chirp makes it (`Transceiver.availablePeers`, the sender of each message, the
/// events) and says what it knows of the peer at that moment. Two `Peer` values are equal when they have the same
/// ``id``, whatever their other properties say: a peer's name or addresses may change while it stays the same peer.
///
/// ```swift
/// for peer in transceiver.connectedPeers {
///     print(peer.name, peer.metadata["room"] ?? "-", peer.addresses)
/// }
/// ```
public struct Peer: Sendable, Hashable, Identifiable, CustomStringConvertible {
    /// What a peer is to the others: an app that advertises itself, or a tool that only dials.
    ///
    /// A transceiver whose `Configuration.advertises` is `false` (a command-line tool such as `chirp send` or an
    /// app's remote control) is a ``tool``: it comes for a moment, sends a message or a request, and goes. Apps leave
    /// tools out of `Transceiver.availablePeers`, `Transceiver.connectedPeers`, the peer events and the `.all`
    /// recipients unless `Configuration.includesTools` is set; a tool's messages and requests are delivered and
    /// answered all the same, with a sender whose `role` is `.tool`.
    public enum Role: Sendable, Hashable {
        /// A peer that advertises itself: the other instances of an app.
        case app
        /// A peer that does not advertise itself and only dials (`Configuration.advertises` is `false`).
        case tool
    }

    /// The fields, in one immutable box. A `Peer` goes with every message a handler receives (its `sender`), so it is
    /// copied a few times per message: one reference costs one retain and one release per copy, where the strings and
    /// collections it holds cost one of each per field. A change (inside Chirp) makes a new box; peers rarely change.
    private struct Fields: Sendable {
        var id: String
        var name: String
        var metadata: [String: String]
        var host: String?
        var addresses: [String]
        var isConnected: Bool
        var role: Role
        var fingerprintText: String?
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

    /// The peer's stable identifier (its `Configuration.peerID`).
    public var id: String { box.fields.id }

    /// The display name the peer chose (its `Configuration.peerName`).
    public package(set) var name: String {
        get { box.fields.name }
        set { update { $0.name = newValue } }
    }

    /// The metadata the peer published (its `Configuration.metadata`).
    public package(set) var metadata: [String: String] {
        get { box.fields.metadata }
        set { update { $0.metadata = newValue } }
    }

    /// The host name it advertised (e.g. `myhost.local.`), if it was discovered through DNS-SD.
    public package(set) var host: String? {
        get { box.fields.host }
        set { update { $0.host = newValue } }
    }

    /// The addresses it can be reached at, as `address:port` text.
    public package(set) var addresses: [String] {
        get { box.fields.addresses }
        set { update { $0.addresses = newValue } }
    }

    /// Whether a connection to the peer was established when this value was made.
    public package(set) var isConnected: Bool {
        get { box.fields.isConnected }
        set { update { $0.isConnected = newValue } }
    }

    /// Whether the peer is an app or a tool (see ``Role``).
    public package(set) var role: Role {
        get { box.fields.role }
        set { update { $0.role = newValue } }
    }

    /// The peer's device identity fingerprint in its readable form (`chirp:...`), when it uses one: what it
    /// advertised, and once connected what its TLS certificate proved. Chirp's `Peer.fingerprint` reads it as a
    /// `Fingerprint`.
    package var fingerprintText: String? {
        get { box.fields.fingerprintText }
        set { update { $0.fingerprintText = newValue } }
    }

    /// Creates a peer value (Chirp's own code and this package's tests; apps get peers from the transceiver).
    package init(
        id: String, name: String, metadata: [String: String] = [:], host: String? = nil, addresses: [String] = [],
        isConnected: Bool = false, role: Role = .app
    ) {
        box = Box(
            Fields(
                id: id, name: name, metadata: metadata, host: host, addresses: addresses, isConnected: isConnected,
                role: role, fingerprintText: nil))
    }

    public static func == (lhs: Peer, rhs: Peer) -> Bool { lhs.box === rhs.box || lhs.id == rhs.id }
    public func hash(into hasher: inout Hasher) { hasher.combine(id) }

    /// The name and the first 8 characters of the id, `alice (8C0E7F0B)`, with control characters escaped: a peer
    /// chooses its own name and id, and this text ends up in logs and on terminals.
    public var description: String { UntrustedText.escaped("\(name) (\(id.prefix(8)))") }
}
