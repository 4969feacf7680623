import ChirpTrust
import NIOCore

/// How one transceiver run protects its connections, set up once from ``Configuration/security``: nothing, TLS
/// with the shared secret, or mutual TLS with the device identity and the trust decision.
enum TransportSecurity: Sendable {
    case none
    case sharedSecret(TLSContexts)
    case identity(IdentityTLSContexts, TrustKeeper)

    /// The TLS handler of a new connection, if any: it goes first in the pipeline. In device-identity mode the TLS
    /// layer takes any certificate whose key the peer proves it holds; whether that device is trusted is decided in
    /// the handshake (``HandshakeHandler``), which knows the peer's name and can tell the peer why.
    func tlsHandler(dialed: Bool) throws -> (any ChannelHandler)? {
        switch self {
        case .none: return nil
        case .sharedSecret(let contexts): return try contexts.handler(dialed: dialed)
        case .identity(let contexts, _): return try contexts.handler(dialed: dialed, trust: { _ in true })
        }
    }

    /// What the handshake checks of the peer's identity, with what a dialed peer advertised.
    func identityCheck(advertised: Fingerprint?) -> IdentityCheck? {
        guard case .identity(_, let keeper) = self else { return nil }
        return IdentityCheck(keeper: keeper, advertised: advertised)
    }

    /// The trust keeper, in device-identity mode.
    var keeper: TrustKeeper? {
        if case .identity(_, let keeper) = self { return keeper }
        return nil
    }
}
