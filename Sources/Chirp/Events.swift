import ChirpSupport

/// Something that happened to a ``Transceiver``, delivered in order through ``Transceiver/makeEvents()``.
public enum TransceiverEvent: Sendable {
    /// The transceiver is listening on `port` and has asked the daemon to advertise it.
    case started(port: Int)
    /// The daemon confirmed the advertisement under this DNS-SD instance name.
    case advertised(instanceName: String)
    /// DNS-SD reported an instance of the service type, not yet resolved. A ``peerAdded(_:)`` follows once it is
    /// resolved, unless it is not a Chirp peer of this protocol version. Reported once per instance name; lets a tool
    /// know how many peers to expect before they connect.
    case instanceFound(instanceName: String)
    /// A peer was discovered (or connected to us before it was discovered).
    case peerAdded(Peer)
    /// A peer is neither advertised nor connected any more.
    case peerRemoved(Peer)
    /// A connection to the peer is established; messages can flow.
    case peerConnected(Peer)
    /// The connection to the peer closed or stopped answering heartbeats.
    case peerDisconnected(Peer)
    /// The set of available peers changed; the new set.
    case availablePeersChanged([Peer])
    /// A connection was refused during the handshake; `peer` names the remote side when it is known.
    case connectionRefused(peer: String, reason: String)
    /// No DNS-SD daemon answers; the message says what to start. Discovery keeps retrying.
    case discoveryUnavailable(String)
    /// A message arrived that no handler takes: no `receive` or `messages(of:)` for its type name (and none for
    /// `RawMessage`), so it was dropped. Reported once per type name and peer (for at most 256 pairs); the metric
    /// `chirp_messages_unhandled_total` counts every such message, and the `Logger` gets a warning that names the
    /// registered types with the same short name. `typeName` is as the peer sent it: escape it before printing it.
    case unhandledMessage(typeName: String, from: Peer)
    /// A message could not be decoded, a handler threw, a message was dropped, ... Nothing was lost silently.
    case error(ChirpError)
    /// The transceiver stopped.
    case stopped
}
