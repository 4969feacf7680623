import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS

#if os(Linux)
/// The floor under the connection set-up figures: bare SwiftNIO connections on loopback, no Chirp, timed from the
/// connect to a one-byte echo after the TLS handshake, with the TLS each Chirp mode uses (TLS 1.2 with a pre-shared
/// key and ECDHE; mutual TLS 1.3 with P-256 certificates, every certificate accepted), in one event loop group of two
/// threads, as two transceivers of one process have.
final class TLSFloor: Sendable {
    enum Kind: Sendable { case psk, mutualTLS13 }

    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
    private let server: any Channel
    let kind: Kind
    private let client: NIOSSLContext

    /// A server of `kind`; for mutual TLS, both ends present the certificate and key in `certificate` and `key`
    /// (PEM files).
    init(_ kind: Kind, certificate: String, key: String) throws {
        self.kind = kind
        let serverContext: NIOSSLContext
        switch kind {
        case .psk:
            var configuration = TLSConfiguration.makePreSharedKeyConfiguration()
            configuration.minimumTLSVersion = .tlsv12
            configuration.maximumTLSVersion = .tlsv12
            configuration.cipherSuites = "ECDHE-PSK-CHACHA20-POLY1305"
            configuration.certificateVerification = .none
            configuration.pskHint = "chirp"
            let bytes = [UInt8](repeating: 7, count: 32)
            configuration.pskServerProvider = { _ in
                var key = NIOSSLSecureBytes()
                key.append(bytes)
                return PSKServerIdentityResponse(key: key)
            }
            configuration.pskClientProvider = { _ in
                var key = NIOSSLSecureBytes()
                key.append(bytes)
                return PSKClientIdentityResponse(key: key, identity: "chirp")
            }
            serverContext = try NIOSSLContext(configuration: configuration)
            client = try NIOSSLContext(configuration: configuration)
        case .mutualTLS13:
            let chain = try NIOSSLCertificate.fromPEMFile(certificate).map { NIOSSLCertificateSource.certificate($0) }
            let privateKey = try NIOSSLPrivateKey(file: key, format: .pem)
            var server = TLSConfiguration.makeServerConfiguration(
                certificateChain: chain, privateKey: .privateKey(privateKey))
            var client = TLSConfiguration.makeClientConfiguration()
            client.certificateChain = chain
            client.privateKey = .privateKey(privateKey)
            for index in 0..<2 {
                var configuration = index == 0 ? server : client
                configuration.minimumTLSVersion = .tlsv13
                configuration.maximumTLSVersion = .tlsv13
                configuration.certificateVerification = .noHostnameVerification
                configuration.trustRoots = .certificates([])
                if index == 0 { server = configuration } else { client = configuration }
            }
            serverContext = try NIOSSLContext(configuration: server)
            self.client = try NIOSSLContext(configuration: client)
        }
        let accept = TLSFloor.acceptEverything
        self.server = try ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        kind == .psk
                            ? NIOSSLServerHandler(context: serverContext)
                            : NIOSSLServerHandler(context: serverContext, customVerificationCallback: accept))
                    try channel.pipeline.syncOperations.addHandler(Echo())
                }
            }
            .bind(host: "127.0.0.1", port: 0).wait()
    }

    /// Milliseconds from the connect to the echo of one byte written once the client's handshake completed.
    func sample() throws -> Double {
        guard let port = server.localAddress?.port else { throw BenchError("the TLS floor server has no port") }
        let loop = group.next()
        let echoed = loop.makePromise(of: Void.self)
        let begin = nowNanos()
        let context = client
        let kind = self.kind
        let accept = TLSFloor.acceptEverything
        let channel = try ClientBootstrap(group: loop)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        kind == .psk
                            ? try NIOSSLClientHandler(context: context, serverHostname: nil)
                            : try NIOSSLClientHandler(
                                context: context, serverHostname: nil, customVerificationCallback: accept))
                    try channel.pipeline.syncOperations.addHandler(Probe(echoed: echoed))
                }
            }
            .connect(host: "127.0.0.1", port: port).wait()
        try echoed.futureResult.wait()
        let elapsed = Double(nowNanos() - begin) / 1e6
        try? channel.close().wait()
        return elapsed
    }

    func close() {
        try? server.close().wait()
        try? group.syncShutdownGracefully()
    }

    /// What Chirp's identity mode does at the TLS layer: every certificate whose key the peer proves is accepted (the
    /// trust decision comes later).
    private static var acceptEverything: NIOSSLCustomVerificationCallback {
        { _, promise in promise.succeed(.certificateVerified) }
    }

    /// Writes back what it reads.
    private final class Echo: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        func channelRead(context: ChannelHandlerContext, data: NIOAny) { context.writeAndFlush(data, promise: nil) }
    }

    /// Writes one byte once the handshake completed; completes `echoed` when it comes back.
    private final class Probe: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        let echoed: EventLoopPromise<Void>
        init(echoed: EventLoopPromise<Void>) { self.echoed = echoed }

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if case .handshakeCompleted = event as? TLSUserEvent {
                context.writeAndFlush(NIOAny(context.channel.allocator.buffer(bytes: [1])), promise: nil)
            }
            context.fireUserInboundEventTriggered(event)
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) { echoed.succeed(()) }
        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            echoed.fail(error)
            context.close(promise: nil)
        }
    }
}
#endif
