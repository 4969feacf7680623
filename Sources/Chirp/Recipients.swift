import ChirpSupport

/// Whom ``Transceiver/send(_:to:)-1sz75`` sends to: one peer, some peers, or every app connected.
///
/// You do not conform to it: `Peer`, `[Peer]` and ``AllPeers`` (`.all`) do, and a call reads as what it does:
///
/// ```swift
/// try transceiver.send(line, to: alice)          // one peer
/// try transceiver.send(line, to: [alice, bob])   // those peers
/// try transceiver.send(line, to: .all)           // every app connected
/// ```
public protocol Recipients: Sendable {
    /// What the recipients are, for Chirp (its contents are internal).
    var _recipientSet: _RecipientSet { get }
}

/// What a ``Recipients`` value names, as Chirp reads it; made by `Peer`, `[Peer]` and ``AllPeers`` only.
public struct _RecipientSet: Sendable {
    enum Target: Sendable {
        case peer(Peer)
        case peers([Peer])
        case all
    }

    let target: Target

    init(_ target: Target) {
        self.target = target
    }
}

/// Every app connected when the message is sent: the recipients `.all` stands for.
///
/// Tools (peers whose `Peer.role` is `Peer.Role.tool`) are left out unless
/// ``Configuration/includesTools`` is set. With the throwing `send`, a peer whose queue is full is skipped and reported
/// as an event; the waiting form waits for room in each full queue in turn.
///
/// ```swift
/// try transceiver.send(ChatLine(text: "hello"), to: .all)
/// ```
public struct AllPeers: Recipients {
    init() {}

    public var _recipientSet: _RecipientSet { _RecipientSet(.all) }
}

extension Recipients where Self == AllPeers {
    /// Every app connected (see ``AllPeers``).
    public static var all: AllPeers { AllPeers() }
}

extension Peer: Recipients {
    public var _recipientSet: _RecipientSet { _RecipientSet(.peer(self)) }
}

extension Array: Recipients where Element == Peer {
    public var _recipientSet: _RecipientSet { _RecipientSet(.peers(self)) }
}
