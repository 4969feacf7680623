import Chirp

/// A connection refusal the transceiver reported (``TransceiverEvent/connectionRefused(peer:reason:)``), and what it
/// means for a CLI: the reason in words that say what to do.
///
/// The core names the peer by its name (a refusal decided from the TXT record), as "NAME (ID8)" (a dial that was
/// refused), or by its address (a connection it accepted and then refused); the kind is read from the core's reason,
/// whose wording the security tests pin down.
struct Refusal: Sendable, Equatable {
    /// Why the connection could not be made.
    enum Kind: Sendable, Equatable {
        /// The app requires a shared secret and this CLI has none.
        case secretRequired
        /// Both use a shared secret, but not the same one (or the peer speaks no TLS).
        case secretMismatch
        /// This CLI has a shared secret and the app uses none.
        case peerHasNoSecret
        /// The app's accept policy refused this CLI.
        case notAccepted
        /// Anything else the core reported.
        case other
    }

    /// The peer as the core named it.
    var peer: String
    /// The core's reason.
    var reason: String

    var kind: Kind {
        if reason.contains("requires a shared secret") { return .secretRequired }
        if reason.contains("does not use a shared secret") { return .peerHasNoSecret }
        if reason.contains("shared secret does not match") { return .secretMismatch }
        if reason.contains("not accepted by the accept policy") { return .notAccepted }
        return .other
    }

    /// Whether this refusal is about `peer`.
    func concerns(_ peer: Peer) -> Bool {
        self.peer == peer.name || self.peer == peer.description
    }

    /// What the CLI prints, naming `app` when the refusal could be tied to it.
    func message(for app: Peer?) -> String {
        let who = app.map(\.commandLabel) ?? "the peer at \(peer)"
        switch kind {
        case .secretRequired:
            return "this app (\(who)) requires a shared secret: set \(SecretOptions.environmentVariable) or pass "
                + "--secret-file PATH"
        case .secretMismatch:
            return "shared secret does not match the one of \(who) (or it uses none): check "
                + "\(SecretOptions.environmentVariable) or --secret-file"
        case .peerHasNoSecret:
            return "\(who) does not use a shared secret, but one was given here: unset "
                + "\(SecretOptions.environmentVariable) and drop --secret-file, or give the app the same secret"
        case .notAccepted:
            return "\(who) did not accept this CLI (the app's accept policy refused it)"
        case .other:
            return "\(who) refused the connection: \(reason)"
        }
    }
}
