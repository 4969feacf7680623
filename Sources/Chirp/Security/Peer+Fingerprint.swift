import ChirpSupport
import ChirpTrust

extension Peer {
    /// The peer's device identity, when it uses one (``Configuration/Security/identity(_:trust:)``): the fingerprint
    /// it advertised while it is only discovered, the one its TLS certificate proved once it is connected (a peer
    /// whose certificate is not what it advertised is refused). Nil for peers without an identity.
    public var fingerprint: Fingerprint? {
        fingerprintText.flatMap { try? Fingerprint(parsing: $0) }
    }
}
