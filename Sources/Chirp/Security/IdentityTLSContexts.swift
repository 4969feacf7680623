import ChirpTrust
import NIOCore
import NIOSSL

/// The TLS contexts of a transceiver with a ``DeviceIdentity``: mutual TLS 1.3, built once, used for every connection.
///
/// Each side presents its identity's self-signed certificate and proves it holds the key (TLS 1.3's
/// CertificateVerify). There is no certificate authority: BoringSSL's chain verification is replaced by one question,
/// asked of the fingerprint of the certificate the peer presented (``Fingerprint/init(of:)``) — the dialer will ask
/// whether it is the one the peer advertised, the acceptor whether its trust store holds it. The acceptor requires
/// a certificate (`certificateVerification = .noHostnameVerification`: a client that sends none fails the
/// handshake), and no name is checked: names are not identities. TLS 1.2 and below are refused.
struct IdentityTLSContexts: Sendable {
    let server: NIOSSLContext
    let client: NIOSSLContext

    /// Whether a peer whose certificate has this fingerprint may connect. Called on the channel's event loop, once
    /// per handshake; it must not block.
    typealias Trust = @Sendable (Fingerprint) -> Bool

    init(identity: DeviceIdentity) throws {
        server = try NIOSSLContext(configuration: Self.configuration(identity: identity, server: true))
        client = try NIOSSLContext(configuration: Self.configuration(identity: identity, server: false))
    }

    /// The TLS configuration of the acceptor (`server`) or the dialer: TLS 1.3 only, this identity's certificate and
    /// key, the peer's certificate required, no trust roots (the verification callback decides).
    static func configuration(identity: DeviceIdentity, server: Bool) -> TLSConfiguration {
        let chain: [NIOSSLCertificateSource] = [.certificate(identity.certificate)]
        let key = identity.privateKey
        var configuration: TLSConfiguration
        if server {
            configuration = .makeServerConfiguration(certificateChain: chain, privateKey: .privateKey(key))
        } else {
            configuration = .makeClientConfiguration()
            configuration.certificateChain = chain
            configuration.privateKey = .privateKey(key)
        }
        configuration.minimumTLSVersion = .tlsv13
        configuration.maximumTLSVersion = .tlsv13
        configuration.certificateVerification = .noHostnameVerification
        configuration.trustRoots = .certificates([])
        return configuration
    }

    /// The TLS handler for a connection we dialed (the client's) or accepted (the server's); it goes first in the
    /// pipeline. The handshake fails unless `trust` says yes to the fingerprint of the certificate the peer presented.
    func handler(dialed: Bool, trust: @escaping Trust) throws -> any ChannelHandler {
        let verify = Self.verification(trust)
        if dialed {
            return try NIOSSLClientHandler(context: client, serverHostname: nil, customVerificationCallback: verify)
        }
        return NIOSSLServerHandler(context: server, customVerificationCallback: verify)
    }

    /// The verification callback: the peer's leaf certificate (the first it presented; TLS 1.3 has checked that the
    /// peer holds its key) passes when `trust` says yes to its fingerprint. A chain with no certificate, or one whose
    /// public key cannot be read, fails.
    static func verification(_ trust: @escaping Trust) -> NIOSSLCustomVerificationCallback {
        { certificates, promise in
            guard let leaf = certificates.first, let fingerprint = try? Fingerprint(of: leaf) else {
                promise.succeed(.failed)
                return
            }
            promise.succeed(trust(fingerprint) ? .certificateVerified : .failed)
        }
    }
}
