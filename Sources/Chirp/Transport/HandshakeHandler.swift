import ChirpSupport
import ChirpTrust
import ChirpWire
import Logging
import NIOCore
import NIOSSL
import NIOTLS

/// Fired down the pipeline once the remote hello was received and accepted.
struct HandshakeCompleted: Sendable {
    var remote: Hello
    /// The fingerprint of the peer's TLS certificate, in device-identity mode.
    var fingerprint: Fingerprint? = nil
}

/// What a handshake checks of the peer's device identity (``Configuration/Security/identity(_:trust:)``).
struct IdentityCheck: Sendable {
    /// Decides whom to trust.
    let keeper: TrustKeeper
    /// The fingerprint the dialed peer advertised (its TXT `fp`); nil for an acceptor.
    let advertised: Fingerprint?
}

/// Runs the handshake: sends our hello as soon as the channel is active, waits (with a deadline) for the remote hello,
/// checks it, then gets out of the way.
///
/// An acceptor with an accept policy sends its hello only once the policy accepted the dialer: a refused dialer then
/// gets a `refuse` frame as the first frame, never a hello, so it does not take the connection for established. (The
/// dialer always sends its hello first, so two peers with policies cannot wait for each other.)
///
/// In device-identity mode the hellos travel only once the peer is known: the dialer sends its hello once the TLS
/// handshake showed the certificate it advertised, the acceptor once the trust decision accepted the dialer's (which
/// needs the name in the dialer's hello, for trust on first use).
///
/// A remote that sends anything but a hello first, a hello we cannot accept, or nothing within the deadline, is
/// refused: a `refuse` frame with the reason is sent when it could be a Chirp peer, and the channel is closed.
/// Failures travel down the pipeline as `HandshakeError`s so the last handler reports them in one place.
final class HandshakeHandler: StartsWhenActive, RemovableChannelHandler {
    typealias InboundIn = Frame
    typealias InboundOut = Frame
    typealias OutboundOut = ByteBuffer

    private enum State {
        case waiting
        /// The remote hello is fine; the accept policy is deciding, or the read that brought it is not over yet. Frames
        /// that arrive meanwhile are held.
        case deciding(remote: Hello, held: [Frame], heldBytes: Int)
        case done
    }

    /// Frames held while the accept policy decides, at most this many bytes.
    static let maximumHeldBytes = 1 << 20

    private let local: Hello
    private let timeout: TimeAmount
    private let role: ConnectionRole
    private let acceptPolicy: (@Sendable (ConnectionCandidate) async -> Bool)?
    private let identity: IdentityCheck?
    /// How to answer a dialer whose hello asks to pair (acceptor, device-identity mode with a pairing policy).
    private let pairing: PairingDoor?
    /// The fingerprint of the peer's certificate, once the TLS handshake showed it (device-identity mode).
    private var presented: Fingerprint?
    private var state = State.waiting
    private var started = false
    private var sentHello = false
    private var deadline: Scheduled<Void>?

    init(
        local: Hello, timeout: TimeAmount, role: ConnectionRole = .acceptor,
        acceptPolicy: (@Sendable (ConnectionCandidate) async -> Bool)? = nil, identity: IdentityCheck? = nil,
        pairing: PairingDoor? = nil
    ) {
        self.pairing = pairing
        self.local = local
        self.timeout = timeout
        self.role = role
        self.acceptPolicy = acceptPolicy
        self.identity = identity
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
    }

    func channelInactive(context: ChannelHandlerContext) {
        if case .deciding = state { state = .done }  // a hello the peer sent and then gave up on: never completed
        deadline?.cancel()
        context.fireChannelInactive()
    }

    func start(context: ChannelHandlerContext) {
        guard !started else { return }
        started = true
        if identity == nil, role == .dialer || acceptPolicy == nil {
            guard sendHello(context: context) else { return }
        }
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let seconds = Double(timeout.nanoseconds) / 1e9
        deadline = context.eventLoop.scheduleTask(in: timeout) {
            let (handler, context) = loopBound.value
            switch handler.state {
            case .waiting, .deciding: break
            case .done: return
            }
            context.fireErrorCaught(HandshakeError.timedOut(seconds: seconds))
            context.close(promise: nil)
        }
    }

    /// Sends our hello (once); `false` when it could not be encoded (the channel is then closing).
    @discardableResult
    private func sendHello(context: ChannelHandlerContext) -> Bool {
        guard !sentHello else { return true }
        sentHello = true
        do {
            context.writeAndFlush(wrapOutboundOut(try local.frame(allocator: context.channel.allocator)), promise: nil)
            return true
        } catch {
            context.fireErrorCaught(HandshakeError.malformedHello("could not encode our hello: \(error)"))
            context.close(promise: nil)
            return false
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let identity, case .handshakeCompleted = event as? TLSUserEvent {
            identityShown(context: context, identity: identity)
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// The TLS handshake is done (device-identity mode): notes the peer's fingerprint; a dialer checks it against what
    /// the peer advertised, then says hello.
    private func identityShown(context: ChannelHandlerContext, identity: IdentityCheck) {
        guard case .waiting = state, presented == nil else { return }
        guard let certificate = try? context.pipeline.syncOperations.nioSSL_peerCertificate(),
            let fingerprint = try? Fingerprint(of: certificate)
        else {
            refuse(context: context, error: .malformedHello("the peer's TLS certificate has no readable public key"))
            return
        }
        presented = fingerprint
        guard role == .dialer else { return }
        if let refusal = TrustDecision.dialerCheck(
            presented: fingerprint, advertised: identity.advertised, name: "the dialed peer")
        {
            refuse(context: context, error: Self.notTrusted(refusal, localName: local.name))
            return
        }
        sendHello(context: context)
    }

    /// The trust decision about a peer that said hello (device-identity mode): nil when it is accepted, else the
    /// refusal.
    private func trustRefusal(of remote: Hello) -> HandshakeError? {
        guard let identity else { return nil }
        guard let presented else {
            return .malformedHello("said hello before the TLS handshake showed its certificate")
        }
        let direction: TrustDecision.Direction = role == .dialer ? .outbound(advertised: identity.advertised) : .inbound
        switch identity.keeper.decide(presented, name: remote.name, direction: direction) {
        case .accept: return nil
        case .refuse(let refusal): return Self.notTrusted(refusal, localName: local.name)
        }
    }

    /// The handshake error of a trust refusal: the decision's sentence for our log, a shorter one for the peer that
    /// names neither our files nor our paths.
    static func notTrusted(_ refusal: TrustRefusal, localName: String) -> HandshakeError {
        let us = "\"\(UntrustedText.escaped(localName))\""
        let remote: String
        switch refusal.kind {
        case .notTrusted:
            remote =
                "\(us) does not trust this device (\(refusal.fingerprint)): its owner can add it with `chirp trust add \(refusal.fingerprint) LABEL`"
        case .identityChanged:
            remote =
                "\(us) has another identity pinned under this peer's name (trust on first use) and refuses this one (\(refusal.fingerprint.short))"
        case .fingerprintMismatch(let advertised):
            remote =
                "\(us) refused: this device's certificate (\(refusal.fingerprint.short)) is not the identity it advertised (\(advertised.short))"
        }
        return .notTrusted(local: refusal.message, remote: remote)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch state {
        case .done:
            context.fireChannelRead(data)
            return
        case .deciding(let remote, var held, let heldBytes):
            let frame = unwrapInboundIn(data)
            guard heldBytes + frame.body.readableBytes <= Self.maximumHeldBytes else {
                refuse(
                    context: context,
                    error: .malformedHello("sent over \(Self.maximumHeldBytes) bytes before being accepted"))
                return
            }
            held.append(frame)
            state = .deciding(remote: remote, held: held, heldBytes: heldBytes + frame.body.readableBytes)
            return
        case .waiting:
            break
        }
        let frame = unwrapInboundIn(data)
        switch frame.knownKind {
        case .hello:
            do {
                let remote = try Hello.parse(frame.body)
                if remote.pairing, role == .acceptor {
                    if let refusal = local.refusal(of: remote) {
                        refuse(context: context, error: refusal)
                    } else {
                        handOverToPairing(context: context, remote: remote)
                    }
                    return
                }
                if let refusal = local.refusal(of: remote) ?? trustRefusal(of: remote) {
                    refuse(context: context, error: refusal)
                    return
                }
                if let acceptPolicy {
                    decide(context: context, remote: remote, policy: acceptPolicy)
                } else {
                    completeAfterThisRead(context: context, remote: remote)
                }
            } catch let error as HandshakeError {
                refuse(context: context, error: error)
            } catch {
                refuse(context: context, error: .malformedHello("\(error)"))
            }
        case .refuse:
            let reason =
                frame.body.getString(at: frame.body.readerIndex, length: min(frame.body.readableBytes, 1024))
                ?? "no reason given"
            state = .done
            context.fireErrorCaught(HandshakeError.refusedByRemote(reason: reason))
            context.close(promise: nil)
        default:
            // Protocol.md section 4: a first frame that is not a hello gets a refuse frame with the reason, then the
            // connection closes.
            refuse(context: context, error: .unexpectedFrame(kind: frame.kind))
        }
    }

    /// The dialer's hello asks to pair: refused unless this transceiver takes pairing requests and its gate lets this
    /// one in; else a ``PairingHandler`` takes this handler's place, and the handlers that serve an established
    /// connection leave the pipeline (nothing on a pairing connection reaches them, nor the app).
    private func handOverToPairing(context: ChannelHandlerContext, remote: Hello) {
        let us = "\"\(UntrustedText.escaped(local.name))\""
        guard identity != nil, let presented else {
            refuse(context: context, error: .pairingRefused("\(us) uses no device identity"))
            return
        }
        guard let pairing else {
            refuse(
                context: context,
                error: .pairingRefused("\(us) does not take pairing requests now (its pairing policy is not set)"))
            return
        }
        if let refusal = pairing.admit() {
            refuse(context: context, error: .pairingRefused("\(us): \(refusal)"))
            return
        }
        state = .done
        deadline?.cancel()
        let operations = context.pipeline.syncOperations
        do {
            func remove<Handler: RemovableChannelHandler>(_ type: Handler.Type) {
                if let other = try? operations.context(handlerType: type) {
                    operations.removeHandler(context: other, promise: nil)
                }
            }
            remove(HeartbeatHandler.self)
            remove(PeerChannelHandler.self)
            remove(ReadGate.self)
            try operations.addHandler(
                PairingHandler(
                    responder: pairing, remote: remote, remoteFingerprint: presented, local: local,
                    timeout: pairing.policy.timeout.timeAmount),
                position: .after(self))
        } catch {
            pairing.release()
            context.fireErrorCaught(error)
            context.close(promise: nil)
            return
        }
        operations.removeHandler(context: context, promise: nil)
    }

    /// Completes the handshake on the event loop's next turn, unless the channel closed meanwhile; frames that arrive
    /// behind the hello are held until then.
    ///
    /// A hello read together with the connection's end is a dial the peer gave up on: a host frozen for a minute
    /// finds, once it runs again, the hello of every attempt its peers made meanwhile in its socket queue, each with
    /// the close that their handshake timeout sent. NIO reads all of a socket's queued bytes and its end in one go,
    /// so by the next turn such a channel is closed, and it is dropped without ever being established: no
    /// `peerConnected` then `peerDisconnected`, no part in the tie-break with the connection that replaces it, and
    /// nothing counted against the next dial.
    private func completeAfterThisRead(context: ChannelHandlerContext, remote: Hello) {
        state = .deciding(remote: remote, held: [], heldBytes: 0)
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.execute {
            let (handler, context) = loopBound.value
            guard case .deciding(_, let held, _) = handler.state, context.channel.isActive else { return }
            handler.complete(context: context, remote: remote, held: held)
        }
    }

    /// Asks the accept policy (off the event loop), then completes or refuses the handshake.
    private func decide(
        context: ChannelHandlerContext, remote: Hello, policy: @escaping @Sendable (ConnectionCandidate) async -> Bool
    ) {
        state = .deciding(remote: remote, held: [], heldBytes: 0)
        let address = context.remoteAddress.map(PeerChannelHandler.text(of:)) ?? "unknown"
        let candidate = ConnectionCandidate(
            peer: Peer(
                id: remote.peerID, name: remote.name, metadata: remote.metadata, addresses: [address],
                role: remote.peerRole),
            address: address, isInbound: role == .acceptor)
        let promise = context.eventLoop.makePromise(of: Bool.self)
        promise.completeWithTask { await policy(candidate) }
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        promise.futureResult.whenSuccess { accepted in
            let (handler, context) = loopBound.value
            // Closed meanwhile (by us, or by the peer that gave up): never established.
            guard case .deciding(_, let held, _) = handler.state, context.channel.isActive else { return }
            if accepted {
                handler.complete(context: context, remote: remote, held: held)
            } else {
                handler.refuse(context: context, error: .notAccepted(name: remote.name))
            }
        }
    }

    private func complete(context: ChannelHandlerContext, remote: Hello, held: [Frame]) {
        guard sendHello(context: context) else { return }  // an acceptor with a policy says hello only now
        state = .done
        deadline?.cancel()
        context.fireUserInboundEventTriggered(HandshakeCompleted(remote: remote, fingerprint: presented))
        for frame in held { context.fireChannelRead(wrapInboundOut(frame)) }
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    /// Tells the remote why, then closes.
    private func refuse(context: ChannelHandlerContext, error: HandshakeError) {
        state = .done
        deadline?.cancel()
        // The frame first (the flush writes it to the socket at once), then the error: reporting it closes the
        // channel, and the remote must get the reason before that.
        let frame = FrameWriter.frame(.refuse, text: error.remoteDescription, allocator: context.channel.allocator)
        context.writeAndFlush(wrapOutboundOut(frame), promise: nil)
        context.fireErrorCaught(error)
    }
}

@available(*, unavailable)
extension HandshakeHandler: Sendable {}
