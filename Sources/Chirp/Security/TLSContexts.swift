import ChirpDiscovery
import NIOCore
import NIOSSL

/// The TLS contexts of one transceiver run: built once from the shared secret, used for every connection.
///
/// TLS 1.2 with ECDHE-PSK cipher suites: the pre-shared key authenticates both ends (a peer without the key fails the
/// handshake's Finished check), ECDHE gives forward secrecy, ChaCha20-Poly1305 encrypts. TLS 1.3 is not used because
/// BoringSSL offers external pre-shared keys only up to TLS 1.2.
struct TLSContexts: Sendable {
    let server: NIOSSLContext
    let client: NIOSSLContext

    /// The PSK identity both ends use; it carries no secret.
    static let identity = "chirp"
    /// Cipher suites, strongest first.
    static let cipherSuites = "ECDHE-PSK-CHACHA20-POLY1305:ECDHE-PSK-AES256-CBC-SHA:ECDHE-PSK-AES128-CBC-SHA"

    init(secret: SharedSecret, serviceType: ServiceType) throws {
        let key = secret.preSharedKey(serviceType: serviceType.name)
        var configuration = TLSConfiguration.makePreSharedKeyConfiguration()
        configuration.minimumTLSVersion = .tlsv12
        configuration.maximumTLSVersion = .tlsv12
        configuration.cipherSuites = Self.cipherSuites
        configuration.certificateVerification = .none
        configuration.pskHint = Self.identity
        configuration.pskServerProvider = { _ in
            var bytes = NIOSSLSecureBytes()
            bytes.append(key)
            return PSKServerIdentityResponse(key: bytes)
        }
        configuration.pskClientProvider = { _ in
            var bytes = NIOSSLSecureBytes()
            bytes.append(key)
            return PSKClientIdentityResponse(key: bytes, identity: Self.identity)
        }
        server = try NIOSSLContext(configuration: configuration)
        client = try NIOSSLContext(configuration: configuration)
    }

    /// The TLS handler for a connection we dialed (the client's) or accepted (the server's); it goes first in the
    /// pipeline.
    func handler(dialed: Bool) throws -> any ChannelHandler {
        if dialed { return try NIOSSLClientHandler(context: client, serverHostname: nil) }
        return NIOSSLServerHandler(context: server)
    }
}
