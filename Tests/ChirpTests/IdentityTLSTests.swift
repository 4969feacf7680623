import ChirpDiscovery
import ChirpTrust
import ChirpWire
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import Testing

@testable import Chirp

/// Mutual TLS 1.3 between device identities (``IdentityTLSContexts``), over real TCP sockets on 127.0.0.1: a listener
/// with NIOSSLServerHandler, a dialer with NIOSSLClientHandler, no transceiver. After the handshake the dialer writes a
/// line and the acceptor echoes it. Every refusal has its positive control: the same set-up with the one thing
/// changed back connects.
@Suite(.timeLimit(.minutes(1))) struct IdentityTLSTests {
    @Test func twoIdentitiesCompleteTheHandshakeAndExchangeBytes() async throws {
        try await withIdentities { alice, bob, _ in
            let acceptor = try IdentityTLSContexts(identity: alice)
            let dialer = try IdentityTLSContexts(identity: bob)
            let seenByAlice = Seen()
            let seenByBob = Seen()
            let outcome = try await exchange(
                acceptor: { try acceptor.handler(dialed: false, trust: seenByAlice.trusting([bob.fingerprint])) },
                dialer: { try dialer.handler(dialed: true, trust: seenByBob.trusting([alice.fingerprint])) })
            #expect(try outcome.acceptor.get() == Self.line)
            #expect(try outcome.dialer.get() == Self.line)
            // What each side computed from the certificate on the wire is the other's fingerprint.
            #expect(seenByAlice.fingerprints == [bob.fingerprint])
            #expect(seenByBob.fingerprints == [alice.fingerprint])
        }
    }

    @Test func aDialerTheAcceptorDoesNotTrustIsRefused() async throws {
        try await withIdentities { alice, bob, carol in
            let acceptor = try IdentityTLSContexts(identity: alice)
            let dialer = try IdentityTLSContexts(identity: bob)
            let seenByAlice = Seen()
            let refused = try await exchange(
                acceptor: { try acceptor.handler(dialed: false, trust: seenByAlice.trusting([carol.fingerprint])) },
                dialer: { try dialer.handler(dialed: true, trust: { $0 == alice.fingerprint }) })
            #expect(refused.acceptorReasons == ["CERTIFICATE_VERIFY_FAILED"])
            #expect(refused.acceptorSentence == "TLS handshake failed: the peer's certificate was not accepted here")
            #expect(
                refused.dialerSentence
                    == "TLS handshake failed: the peer did not accept our certificate: it does not trust this device",
                "\(refused.dialerReasons)")
            #expect(seenByAlice.fingerprints == [bob.fingerprint])
            // The positive control: alice trusts bob, bob connects.
            let accepted = try await exchange(
                acceptor: { try acceptor.handler(dialed: false, trust: { $0 == bob.fingerprint }) },
                dialer: { try dialer.handler(dialed: true, trust: { $0 == alice.fingerprint }) })
            #expect(try accepted.dialer.get() == Self.line)
        }
    }

    /// The dialer's check: the acceptor is not the device it meant to reach (later, the fingerprint it advertised).
    @Test func anAcceptorTheDialerDoesNotTrustIsRefused() async throws {
        try await withIdentities { alice, bob, carol in
            let acceptor = try IdentityTLSContexts(identity: alice)
            let dialer = try IdentityTLSContexts(identity: bob)
            let seenByBob = Seen()
            let refused = try await exchange(
                acceptor: { try acceptor.handler(dialed: false, trust: { $0 == bob.fingerprint }) },
                dialer: { try dialer.handler(dialed: true, trust: seenByBob.trusting([carol.fingerprint])) })
            #expect(refused.dialerReasons == ["CERTIFICATE_VERIFY_FAILED"])
            #expect(refused.acceptor.isFailure)
            #expect(seenByBob.fingerprints == [alice.fingerprint])
            // The positive control: bob expects alice, and reaches her.
            let accepted = try await exchange(
                acceptor: { try acceptor.handler(dialed: false, trust: { $0 == bob.fingerprint }) },
                dialer: { try dialer.handler(dialed: true, trust: { $0 == alice.fingerprint }) })
            #expect(try accepted.acceptor.get() == Self.line)
        }
    }

    @Test func aDialerWithoutACertificateIsRefused() async throws {
        try await withIdentities { alice, bob, _ in
            let acceptor = try IdentityTLSContexts(identity: alice)
            var anonymous = IdentityTLSContexts.configuration(identity: bob, server: false)
            anonymous.certificateChain = []
            anonymous.privateKey = nil
            let seenByAlice = Seen()
            let refused = try await exchange(
                acceptor: { try acceptor.handler(dialed: false, trust: seenByAlice.trusting([bob.fingerprint])) },
                dialer: try Self.dialer(anonymous, expecting: alice))
            #expect(refused.acceptorReasons == ["PEER_DID_NOT_RETURN_A_CERTIFICATE"])
            #expect(
                refused.acceptorSentence
                    == "TLS handshake failed: the peer presented no certificate: it uses no device identity "
                    + "(set one with --identity)")
            #expect(refused.dialer.isFailure)
            #expect(seenByAlice.fingerprints.isEmpty)
            // The positive control: the same configuration with bob's certificate connects.
            let accepted = try await exchange(
                acceptor: { try acceptor.handler(dialed: false, trust: { $0 == bob.fingerprint }) },
                dialer: try Self.dialer(
                    IdentityTLSContexts.configuration(identity: bob, server: false), expecting: alice))
            #expect(try accepted.acceptor.get() == Self.line)
        }
    }

    @Test func aTLS12OnlyDialerIsRefused() async throws {
        try await withIdentities { alice, bob, _ in
            let acceptor = try IdentityTLSContexts(identity: alice)
            var old = IdentityTLSContexts.configuration(identity: bob, server: false)
            old.minimumTLSVersion = .tlsv12
            old.maximumTLSVersion = .tlsv12
            let seenByAlice = Seen()
            let refused = try await exchange(
                acceptor: { try acceptor.handler(dialed: false, trust: seenByAlice.trusting([bob.fingerprint])) },
                dialer: try Self.dialer(old, expecting: alice))
            #expect(refused.acceptorReasons == ["UNSUPPORTED_PROTOCOL"])
            #expect(refused.acceptorSentence == Self.notTLS13)
            #expect(refused.dialer.isFailure)
            #expect(seenByAlice.fingerprints.isEmpty)
            // The positive control: the same dialer allowed TLS 1.3 connects.
            var current = old
            current.maximumTLSVersion = .tlsv13
            let accepted = try await exchange(
                acceptor: { try acceptor.handler(dialed: false, trust: { $0 == bob.fingerprint }) },
                dialer: try Self.dialer(current, expecting: alice))
            #expect(try accepted.acceptor.get() == Self.line)
        }
    }

    /// A peer with a shared secret dials one with a device identity (its TXT said otherwise, or it dials by address):
    /// TLS 1.2 with a pre-shared key against TLS 1.3 with certificates, and the acceptor says what to look at.
    @Test func aDialerWithASharedSecretIsToldApartFromOneWithoutTLS() async throws {
        try await withIdentities { alice, bob, _ in
            let acceptor = try IdentityTLSContexts(identity: alice)
            let secret = try TLSContexts(
                secret: SharedSecret("a shared secret of the test"), serviceType: ServiceType("_chirptls._tcp"))
            let withSecret = try await exchange(
                acceptor: { try acceptor.handler(dialed: false, trust: { _ in true }) },
                dialer: { try secret.handler(dialed: true) })
            #expect(withSecret.acceptorSentence == Self.notTLS13, "\(withSecret.acceptorReasons)")
            #expect(withSecret.dialer.isFailure)
            // A dialer that speaks no TLS at all writes its line in the clear.
            let plain = try await exchange(
                acceptor: { try acceptor.handler(dialed: false, trust: { _ in true }) },
                dialer: { Plain() })
            #expect(
                plain.acceptorSentence
                    == "TLS handshake failed: the peer does not speak TLS: it uses no device identity and no shared "
                    + "secret", "\(plain.acceptorReasons)")
            // The positive control: the same acceptor, a dialer with an identity.
            let dialer = try IdentityTLSContexts(identity: bob)
            let accepted = try await exchange(
                acceptor: { try acceptor.handler(dialed: false, trust: { _ in true }) },
                dialer: { try dialer.handler(dialed: true, trust: { $0 == alice.fingerprint }) })
            #expect(try accepted.acceptor.get() == Self.line)
            #expect(accepted.acceptorSentence == nil)
        }
    }

    // MARK: - Helpers

    static let notTLS13 =
        "TLS handshake failed: the peer does not speak TLS 1.3, which device identities need: it uses a shared secret "
        + "(TLS 1.2), or an older TLS library"

    /// A dialer without TLS: its bytes go out as they are.
    private final class Plain: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
    }

    /// What the dialer writes and the acceptor echoes.
    static let line = "hello from the dialer"

    /// What each end of one connection read after the handshake (the line), or why it failed.
    struct Outcome {
        var acceptor: Result<String, any Error>
        var dialer: Result<String, any Error>
        var acceptorReasons: [String] { IdentityTLSTests.reasons(acceptor) }
        /// The sentence the acceptor logs (``HandshakeError/explaining(_:withSecret:withIdentity:)``), if it failed.
        var acceptorSentence: String? { IdentityTLSTests.sentence(acceptor) }
        var dialerSentence: String? { IdentityTLSTests.sentence(dialer) }
        var dialerReasons: [String] { IdentityTLSTests.reasons(dialer) }
    }

    /// The fingerprints a verification callback was asked about.
    final class Seen: Sendable {
        private let box = NIOLockedValueBox<[Fingerprint]>([])
        var fingerprints: [Fingerprint] { box.withLockedValue { $0 } }

        /// A trust that records each fingerprint and says yes to those of `trusted`.
        func trusting(_ trusted: Set<Fingerprint>) -> IdentityTLSContexts.Trust {
            { fingerprint in
                self.box.withLockedValue { $0.append(fingerprint) }
                return trusted.contains(fingerprint)
            }
        }
    }

    /// One connection on 127.0.0.1 through the TLS handlers that `acceptor` and `dialer` make, the line written and
    /// echoed; returns when both ends have read it or failed.
    private func exchange(
        acceptor: @escaping @Sendable () throws -> any ChannelHandler,
        dialer: @escaping @Sendable () throws -> any ChannelHandler
    ) async throws -> Outcome {
        let group = MultiThreadedEventLoopGroup.singleton
        let acceptorRead = group.next().makePromise(of: String.self)
        let dialerRead = group.next().makePromise(of: String.self)
        let listener = try await ServerBootstrap(group: group)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(acceptor())
                    try channel.pipeline.syncOperations.addHandler(End(read: acceptorRead, echoes: true))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let port = try #require(listener.localAddress?.port)
        let connection = try await ClientBootstrap(group: group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(dialer())
                    try channel.pipeline.syncOperations.addHandler(End(read: dialerRead, echoes: false))
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
        let outcome = Outcome(
            acceptor: await Self.result(acceptorRead.futureResult), dialer: await Self.result(dialerRead.futureResult))
        try? await connection.close()
        try await listener.close()
        return outcome
    }

    /// A dialer's handler with `configuration`, that accepts `acceptor`'s certificate only.
    private static func dialer(
        _ configuration: TLSConfiguration, expecting acceptor: DeviceIdentity
    ) throws -> @Sendable () throws -> any ChannelHandler {
        let context = try NIOSSLContext(configuration: configuration)
        let fingerprint = acceptor.fingerprint
        return {
            try NIOSSLClientHandler(
                context: context, serverHostname: nil,
                customVerificationCallback: IdentityTLSContexts.verification { $0 == fingerprint })
        }
    }

    /// The end of a test connection: the dialer writes ``line`` (sent once the handshake is done), the acceptor echoes what
    /// it reads; the first read completes `read`, so does the first error or the close (with a failure).
    private final class End: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let read: EventLoopPromise<String>
        let echoes: Bool

        init(read: EventLoopPromise<String>, echoes: Bool) {
            self.read = read
            self.echoes = echoes
        }

        /// The dialer writes at once: the TLS handler holds the line until the handshake is done.
        func channelActive(context: ChannelHandlerContext) {
            if !echoes {
                context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: IdentityTLSTests.line)), promise: nil)
            }
            context.fireChannelActive()
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let buffer = unwrapInboundIn(data)
            if echoes { context.writeAndFlush(wrapOutboundOut(buffer), promise: nil) }
            read.succeed(String(buffer: buffer))
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            read.fail(error)
            context.close(promise: nil)
        }

        func channelInactive(context: ChannelHandlerContext) {
            read.fail(ChannelError.eof)
            context.fireChannelInactive()
        }
    }

    private static func result(_ future: EventLoopFuture<String>) async -> Result<String, any Error> {
        do {
            return .success(try await future.get())
        } catch {
            return .failure(error)
        }
    }

    /// The sentence a side logs for its failed handshake (``HandshakeError/explaining(_:withSecret:withIdentity:)``).
    static func sentence(_ result: Result<String, any Error>) -> String? {
        guard case .failure(let error) = result else { return nil }
        return HandshakeError.explaining(error, withSecret: false, withIdentity: true)?.description
    }

    /// BoringSSL's reason names in a failed handshake (`CERTIFICATE_VERIFY_FAILED`), or the error as text.
    static func reasons(_ result: Result<String, any Error>) -> [String] {
        guard case .failure(let error) = result else { return [] }
        if case NIOSSLError.handshakeFailed(.sslError(let stack)) = error {
            return stack.map { String(TLSFailure.reasonName(of: "\($0)")) }
        }
        return ["\(error)"]
    }

    /// Three identities (alice, bob, carol) in a temporary directory, removed afterwards.
    private func withIdentities(
        _ body: (DeviceIdentity, DeviceIdentity, DeviceIdentity) async throws -> Void
    ) async throws {
        let scratch = NSTemporaryDirectory() + "chirp-identity-tls-test-" + UUID().uuidString.prefix(8)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let identities = try ["alice", "bob", "carol"].map {
            try DeviceIdentity.loadOrCreate(name: $0, directory: scratch + "/" + $0)
        }
        try await body(identities[0], identities[1], identities[2])
    }
}

extension Result {
    fileprivate var isFailure: Bool {
        if case .failure = self { return true }
        return false
    }
}
