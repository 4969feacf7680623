import ChirpSupport
import ChirpTrust
import ChirpWire
import Logging
import NIOCore
import NIOSSL
import NIOTLS

/// What an acceptor needs to answer a pairing request (``Configuration/pairing``): the policy that asks a person,
/// the gate that lets requests through one at a time, and the keeper that writes the trust file on a yes.
struct PairingDoor: Sendable {
    let policy: PairingPolicy
    let keeper: TrustKeeper
    let own: Fingerprint
    let logger: Logger
    /// Asks the gate to let a request in: nil when it may go on (the gate is then held until ``release``).
    let admit: @Sendable () -> PairingGate<ContinuousClock.Instant>.Refusal?
    /// The request let in is over.
    let release: @Sendable () -> Void
}

/// What the dialing side of a pairing needs (``Transceiver/pair(with:timeout:showingCode:)``).
struct PairingCall: Sendable {
    let keeper: TrustKeeper
    let own: Fingerprint
    /// The fingerprint the peer advertised, which its certificate must be; nil when it advertised none.
    let advertised: Fingerprint?
    let showCode: @Sendable (String) -> Void
    let result: EventLoopPromise<PairingResult>
}

/// Runs one pairing on its connection, in place of the handshake and everything after it: the hellos that asked for
/// pairing, the ``PairingExchange`` in ``FrameKind/pair`` frames, the person's answer, then the responder's "paired"
/// byte (or a `refuse` frame with the reason), and the end of the connection. Nothing on this connection reaches a
/// message handler, and no peer is added to the peer table: the devices trust each other only once a person said
/// yes, and talk over ordinary connections afterwards.
///
/// The dialer's pipeline is TLS, ``FrameReader`` and this handler. An acceptor's starts as every connection's does;
/// its ``HandshakeHandler`` puts this handler in its place when the dialer's hello asks for pairing.
final class PairingHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = Frame
    typealias OutboundOut = ByteBuffer

    /// The responder's last message: the pairing is confirmed and written on its side.
    static let pairedByte: UInt8 = 4

    private enum Side {
        case initiator(PairingCall)
        case responder(PairingDoor, remote: Hello, remoteFingerprint: Fingerprint)
    }

    private enum State {
        /// Initiator: waiting for the TLS handshake to show the responder's certificate.
        case awaitingTLS
        /// Initiator: our hello is sent; waiting for the responder's.
        case awaitingHello(remoteFingerprint: Fingerprint)
        /// Both: the exchange runs.
        case exchanging(PairingExchange, remote: Hello, remoteFingerprint: Fingerprint)
        /// Initiator: the code is shown; waiting for the person's answer on the other side.
        case awaitingAnswer(code: PairingCode, remote: Hello, remoteFingerprint: Fingerprint)
        /// Responder: the person is asked.
        case asking
        case finished
    }

    private let side: Side
    private let local: Hello
    private let timeout: TimeAmount
    private var state: State
    private var deadline: Scheduled<Void>?
    private var released = false

    /// The dialing side: sends its hello once TLS showed the advertised certificate.
    init(initiator call: PairingCall, local: Hello, timeout: TimeAmount) {
        side = .initiator(call)
        self.local = local
        self.timeout = timeout
        state = .awaitingTLS
    }

    /// The accepting side, once the dialer's hello asked for pairing and the gate let it in.
    init(responder door: PairingDoor, remote: Hello, remoteFingerprint: Fingerprint, local: Hello, timeout: TimeAmount)
    {
        side = .responder(door, remote: remote, remoteFingerprint: remoteFingerprint)
        self.local = local
        self.timeout = timeout
        state = .exchanging(
            PairingExchange(role: .responder, own: door.own, peer: remoteFingerprint), remote: remote,
            remoteFingerprint: remoteFingerprint)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let seconds = Int(timeout.nanoseconds / 1_000_000_000)
        deadline = context.eventLoop.scheduleTask(in: timeout) {
            let (handler, context) = loopBound.value
            handler.fail(context: context, reason: "it did not complete within \(seconds) s", tellPeer: true)
        }
        if case .responder = side {
            // The acceptor's hello says yes to the pairing: the dialer then commits.
            sendHello(context: context)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadline?.cancel()
        fail(context: context, reason: "the connection closed before the pairing completed", tellPeer: false)
        // Not passed on: nothing after this handler takes part in a pairing.
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        let reason: String
        if let tls = error as? NIOSSLError, case .handshakeFailed = tls {
            reason = "the TLS handshake failed: the peer uses no device identity, or not TLS 1.3 (\(tls))"
        } else if let handshake = error as? HandshakeError {
            reason = handshake.description
        } else {
            reason = "\(error)"
        }
        fail(context: context, reason: reason, tellPeer: false)
        context.close(promise: nil)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard case .initiator(let call) = side, case .awaitingTLS = state,
            case .handshakeCompleted = event as? TLSUserEvent
        else { return }
        guard let certificate = try? context.pipeline.syncOperations.nioSSL_peerCertificate(),
            let fingerprint = try? Fingerprint(of: certificate)
        else {
            fail(context: context, reason: "the peer's TLS certificate has no readable public key", tellPeer: true)
            return
        }
        if let refusal = TrustDecision.dialerCheck(
            presented: fingerprint, advertised: call.advertised, name: Self.peerLabel(context))
        {
            fail(context: context, reason: refusal.message, tellPeer: true)
            return
        }
        state = .awaitingHello(remoteFingerprint: fingerprint)
        sendHello(context: context)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        if frame.knownKind == .refuse {
            let reason =
                frame.body.getString(at: frame.body.readerIndex, length: min(frame.body.readableBytes, 1024))
                ?? "no reason given"
            fail(context: context, reason: "the peer refused: \(UntrustedText.escaped(reason))", tellPeer: false)
            context.close(promise: nil)
            return
        }
        switch state {
        case .awaitingHello(let remoteFingerprint):
            helloArrived(frame, remoteFingerprint: remoteFingerprint, context: context)
        case .exchanging(var exchange, let remote, let remoteFingerprint):
            guard frame.knownKind == .pair, let message = PairingMessage(bytes: frame.body.readableBytesView) else {
                fail(
                    context: context, reason: "sent \(Self.name(of: frame)) instead of a pairing message",
                    tellPeer: true)
                return
            }
            do {
                let step = try exchange.receive(message)
                if let reply = step.reply { send(reply, context: context) }
                if let code = step.code {
                    codeComputed(code, remote: remote, remoteFingerprint: remoteFingerprint, context: context)
                } else {
                    state = .exchanging(exchange, remote: remote, remoteFingerprint: remoteFingerprint)
                }
            } catch {
                fail(context: context, reason: "\(error)", tellPeer: true)
            }
        case .awaitingAnswer(let code, let remote, let remoteFingerprint):
            guard frame.knownKind == .pair, frame.body.readableBytes == 1,
                frame.body.getInteger(at: frame.body.readerIndex, as: UInt8.self) == Self.pairedByte
            else {
                fail(context: context, reason: "sent \(Self.name(of: frame)) instead of its answer", tellPeer: true)
                return
            }
            paired(code: code, remote: remote, remoteFingerprint: remoteFingerprint, context: context)
        case .awaitingTLS, .asking, .finished:
            fail(context: context, reason: "sent \(Self.name(of: frame)) out of turn", tellPeer: true)
        }
    }

    // MARK: - Steps

    private func helloArrived(_ frame: Frame, remoteFingerprint: Fingerprint, context: ChannelHandlerContext) {
        guard case .initiator(let call) = side else { return }
        guard frame.knownKind == .hello else {
            fail(context: context, reason: "sent \(Self.name(of: frame)) instead of a hello", tellPeer: true)
            return
        }
        let remote: Hello
        do {
            remote = try Hello.parse(frame.body)
        } catch {
            fail(context: context, reason: "\(error)", tellPeer: true)
            return
        }
        if let refusal = local.refusal(of: remote) {
            fail(context: context, reason: refusal.description, tellPeer: true)
            return
        }
        guard remote.pairing else {
            // An older peer, which read our hello as an ordinary one and trusts this device already.
            fail(
                context: context,
                reason: "the peer answered with an ordinary hello: it does not know pairing (an older Chirp)",
                tellPeer: true)
            return
        }
        var exchange = PairingExchange(role: .initiator, own: call.own, peer: remoteFingerprint)
        do {
            send(try exchange.start(), context: context)
        } catch {
            fail(context: context, reason: "\(error)", tellPeer: true)
            return
        }
        state = .exchanging(exchange, remote: remote, remoteFingerprint: remoteFingerprint)
    }

    private func codeComputed(
        _ code: PairingCode, remote: Hello, remoteFingerprint: Fingerprint, context: ChannelHandlerContext
    ) {
        switch side {
        case .initiator(let call):
            state = .awaitingAnswer(code: code, remote: remote, remoteFingerprint: remoteFingerprint)
            call.showCode(code.description)
        case .responder(let door, _, _):
            state = .asking
            let deviceName = (try? context.pipeline.syncOperations.nioSSL_peerCertificate())?.commonName
            let request = PairingRequest(
                name: deviceName ?? remote.name, peerName: remote.name, fingerprint: remoteFingerprint,
                code: code.description,
                address: context.remoteAddress.map(PeerChannelHandler.text(of:)) ?? "unknown")
            door.logger.notice(
                "a device asks to pair: a person is asked to compare the code",
                metadata: ["peer": "\(UntrustedText.escaped(remote.name))", "fingerprint": "\(remoteFingerprint)"])
            let answer = context.eventLoop.makePromise(of: PairingAnswer.self)
            answer.completeWithTask { await door.policy.confirm(request) }
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            answer.futureResult.whenSuccess { answer in
                let (handler, context) = loopBound.value
                handler.answered(answer, door: door, request: request, context: context)
            }
        }
    }

    /// The person answered (responder).
    private func answered(
        _ answer: PairingAnswer, door: PairingDoor, request: PairingRequest, context: ChannelHandlerContext
    ) {
        defer { release() }
        guard case .asking = state, context.channel.isActive else { return }  // the dialer gave up meanwhile
        guard case .accept(let permissions) = answer else {
            door.logger.notice(
                "pairing declined", metadata: ["peer": "\(UntrustedText.escaped(request.name))"])
            fail(context: context, reason: "the pairing was declined on \"\(Self.shown(local.name))\"", tellPeer: true)
            return
        }
        do {
            try door.keeper.trust(request.fingerprint, name: request.name, permissions: permissions)
        } catch {
            door.logger.error("pairing failed: could not write the trust file: \(error)")
            fail(
                context: context,
                reason: "\"\(Self.shown(local.name))\" could not write its trust file; nothing changed there",
                tellPeer: true)
            return
        }
        state = .finished
        deadline?.cancel()
        var byte = context.channel.allocator.buffer(capacity: 1)
        byte.writeInteger(Self.pairedByte)
        let channel = context.channel
        context.writeAndFlush(
            wrapOutboundOut(FrameWriter.frame(.pair, body: byte, allocator: context.channel.allocator))
        ).whenComplete { _ in channel.close(promise: nil) }
    }

    /// The responder said "paired" (initiator): trust it here too.
    private func paired(
        code: PairingCode, remote: Hello, remoteFingerprint: Fingerprint, context: ChannelHandlerContext
    ) {
        guard case .initiator(let call) = side else { return }
        state = .finished
        deadline?.cancel()
        do {
            try call.keeper.trust(remoteFingerprint, name: remote.name, permissions: Permission.defaults)
        } catch {
            call.result.fail(
                ChirpError.pairingFailed(
                    with: remote.name,
                    reason: "the peer trusts this device now, but this side could not write its file: \(error)",
                    cause: error))
            context.close(promise: nil)
            return
        }
        call.result.succeed(PairingResult(name: remote.name, fingerprint: remoteFingerprint, code: code.description))
        context.close(promise: nil)
    }

    // MARK: - Sending and failing

    private func sendHello(context: ChannelHandlerContext) {
        var hello = local
        hello.pairing = true
        do {
            context.writeAndFlush(wrapOutboundOut(try hello.frame(allocator: context.channel.allocator)), promise: nil)
        } catch {
            fail(context: context, reason: "could not encode our hello: \(error)", tellPeer: false)
            context.close(promise: nil)
        }
    }

    private func send(_ message: PairingMessage, context: ChannelHandlerContext) {
        var body = context.channel.allocator.buffer(capacity: PairingMessage.byteCount)
        body.writeBytes(message.bytes)
        context.writeAndFlush(
            wrapOutboundOut(FrameWriter.frame(.pair, body: body, allocator: context.channel.allocator)), promise: nil)
    }

    /// Ends the pairing unsuccessfully (once): the dialer's call fails with `reason`; the peer is told it in a
    /// `refuse` frame when `tellPeer`, and the connection closes.
    private func fail(context: ChannelHandlerContext, reason: String, tellPeer: Bool) {
        if case .finished = state { return }
        let wasAsking: Bool
        if case .asking = state { wasAsking = true } else { wasAsking = false }
        state = .finished
        deadline?.cancel()
        switch side {
        case .initiator(let call):
            call.result.fail(ChirpError.pairingFailed(with: Self.peerLabel(context), reason: reason))
        case .responder(let door, let remote, _):
            door.logger.notice(
                "pairing ended without a pairing: \(reason)",
                metadata: ["peer": "\(UntrustedText.escaped(remote.name))"])
            if !wasAsking { release() }  // else once the person answered: one question at a time
        }
        guard context.channel.isActive else { return }
        if tellPeer {
            let frame = FrameWriter.frame(.refuse, text: reason, allocator: context.channel.allocator)
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(frame)).whenComplete { _ in channel.close(promise: nil) }
        } else {
            context.close(promise: nil)
        }
    }

    /// Lets the next request through the acceptor's gate (once).
    private func release() {
        guard case .responder(let door, _, _) = side, !released else { return }
        released = true
        door.release()
    }

    private static func peerLabel(_ context: ChannelHandlerContext) -> String {
        context.remoteAddress.map(PeerChannelHandler.text(of:)) ?? "the peer"
    }

    private static func name(of frame: Frame) -> String {
        frame.knownKind.map { "a \($0) frame" } ?? "a frame of unknown kind 0x\(String(frame.kind, radix: 16))"
    }

    private static func shown(_ text: String) -> String { UntrustedText.escaped(text) }
}

@available(*, unavailable)
extension PairingHandler: Sendable {}
