import ChirpTrust

/// Whom a transceiver with a ``DeviceIdentity`` trusts (``Configuration/Security/identity(_:trust:)``).
///
/// Every peer proves in the TLS 1.3 handshake that it holds the key of the certificate it presents, so its
/// `Fingerprint` cannot be forged (a name or an address can). A dialer also refuses a peer whose certificate is not
/// the fingerprint it advertised. Refusals are logged with a sentence that says what to run, reach the refused peer
/// as the reason of its refusal, and come as ``TransceiverEvent/connectionRefused(peer:reason:)`` events.
public enum PeerTrust: Sendable, Equatable {
    /// Only the devices listed in a trust file (one `FINGERPRINT LABEL [perms=...]` line each, like SSH's
    /// `authorized_keys`; `TrustStore`), with that line's permissions. The file is read again when it changes:
    /// removing a device's line closes its connections within a second. A file other users may write to, or one
    /// with a malformed line, is refused whole: at start it is an error, later the store read before stays in use
    /// (and a warning is logged).
    ///
    /// - Parameter file: the trust file; by default `trusted-peers` in the identity's directory. A missing file
    ///   trusts nobody (`chirp trust add` makes it).
    case trustedPeers(file: String? = nil)
    /// Trust on first use, as SSH's `known_hosts`: the first identity seen under a peer name is pinned (written to
    /// the pins file) and accepted; a different identity under that name later is refused, every time, with a
    /// message that says so, until its pin is removed from the file.
    ///
    /// - Parameters:
    ///   - file: the pins file; by default `known-peers` in the identity's directory.
    ///   - permissions: what a peer accepted this way may do. Default: `Permission.defaults`.
    case trustOnFirstUse(file: String? = nil, permissions: Set<Permission> = Permission.defaults)
}
