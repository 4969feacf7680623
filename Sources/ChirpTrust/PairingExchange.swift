import Crypto

/// One side of a pairing: a short code both people compare, which a man in the middle cannot make equal on both
/// sides (Bluetooth's numeric comparison, ZRTP's short authentication string).
///
/// It runs inside the mutual TLS connection between the two devices, each knowing its own fingerprint and the one
/// the other side's certificate showed:
///
/// 1. the initiator (A) picks a random 32-byte nonce nA and sends ``PairingMessage/commit(_:)``: SHA-256(nA);
/// 2. the responder (B) picks nB and sends ``PairingMessage/nonce(_:)``: nB;
/// 3. A sends ``PairingMessage/reveal(_:)``: nA; B checks that SHA-256(nA) is the commitment;
/// 4. each side shows ``PairingCode``(fpA, fpB, nA, nB), computed from the fingerprints as *it* sees them: its own,
///    and the one the other side's certificate showed.
///
/// A relay that terminates TLS on both sides shows each one its own certificate, so A computes the code over
/// (fpA, fpRelay) and B over (fpRelay', fpB): the codes differ, except by a one-in-a-million chance the relay cannot
/// improve, because A committed to nA before seeing nB and B sent nB before seeing nA, so neither nonce can be chosen
/// to make the codes meet.
///
/// An exchange is used once: after its code, or after an error, every call throws ``PairingError/Kind/finished``.
package struct PairingExchange: Sendable {
    /// Which side this is.
    package enum Role: Sendable, Equatable {
        /// Sends the commitment first (the side that asked to pair: `listrctl pair`).
        case initiator
        /// Answers (the app asked to pair).
        case responder
    }

    /// What to do after a message: send `reply` if there is one, show `code` if there is one.
    package struct Step: Sendable, Equatable {
        /// The message to send to the other side.
        package var reply: PairingMessage?
        /// The code to show: the exchange is complete on this side.
        package var code: PairingCode?
    }

    private enum State: Sendable {
        case initial
        /// Initiator: the commitment is sent, the responder's nonce awaited.
        case committed
        /// Responder: the commitment is held and our nonce sent, the reveal awaited.
        case awaitingReveal(commitment: [UInt8])
        case finished
    }

    /// This side.
    package let role: Role
    private let ownFingerprint: Fingerprint
    private let peerFingerprint: Fingerprint
    private let nonce: [UInt8]
    private var state = State.initial

    /// One side's exchange: `role`, its own fingerprint `own`, the one the other side's certificate showed `peer`,
    /// its nonce drawn from `random` (a cryptographically secure generator; a seeded one in tests).
    package init(
        role: Role, own: Fingerprint, peer: Fingerprint, using random: inout some RandomNumberGenerator
    ) {
        self.role = role
        ownFingerprint = own
        peerFingerprint = peer
        nonce = (0..<Self.nonceCount).map { _ in UInt8.random(in: .min ... .max, using: &random) }
    }

    /// One side's exchange, its nonce from the system's secure random source.
    package init(role: Role, own: Fingerprint, peer: Fingerprint) {
        var random = SystemRandomNumberGenerator()
        self.init(role: role, own: own, peer: peer, using: &random)
    }

    /// The bytes of a nonce.
    package static let nonceCount = 32

    /// The initiator's first message: the commitment to its nonce.
    ///
    /// - Throws: ``PairingError`` when this side is the responder, or the exchange has started already.
    package mutating func start() throws(PairingError) -> PairingMessage {
        if case .finished = state { throw PairingError(.finished) }
        guard case .initial = state, role == .initiator else {
            throw fail(.outOfOrder(expected: expected, got: "start()"))
        }
        state = .committed
        return .commit(Array(SHA256.hash(data: nonce)))
    }

    /// What to do with `message` from the other side.
    ///
    /// - Throws: ``PairingError``: a message out of order, a body that is not 32 bytes, a reveal that does not match
    ///   the commitment, or any message once the exchange is over. The exchange is over after any error.
    package mutating func receive(_ message: PairingMessage) throws(PairingError) -> Step {
        switch (state, message) {
        case (.finished, _):
            throw PairingError(.finished)
        case (.initial, .commit(let commitment)) where role == .responder:
            try checkLength(commitment, of: message)
            state = .awaitingReveal(commitment: commitment)
            return Step(reply: .nonce(nonce))
        case (.committed, .nonce(let responderNonce)):
            try checkLength(responderNonce, of: message)
            state = .finished
            let code = PairingCode(
                initiator: ownFingerprint, responder: peerFingerprint, initiatorNonce: nonce,
                responderNonce: responderNonce)
            return Step(reply: .reveal(nonce), code: code)
        case (.awaitingReveal(let commitment), .reveal(let initiatorNonce)):
            try checkLength(initiatorNonce, of: message)
            guard Array(SHA256.hash(data: initiatorNonce)) == commitment else { throw fail(.commitmentMismatch) }
            state = .finished
            let code = PairingCode(
                initiator: peerFingerprint, responder: ownFingerprint, initiatorNonce: initiatorNonce,
                responderNonce: nonce)
            return Step(code: code)
        case (.initial, _), (.committed, _), (.awaitingReveal, _):
            throw fail(.outOfOrder(expected: expected, got: message.name))
        }
    }

    /// The message this side waits for, for an error.
    private var expected: String {
        switch state {
        case .initial: role == .responder ? "commit" : "start() (the initiator sends first)"
        case .committed: "nonce"
        case .awaitingReveal: "reveal"
        case .finished: "nothing (the exchange is over)"
        }
    }

    private mutating func checkLength(_ body: [UInt8], of message: PairingMessage) throws(PairingError) {
        guard body.count == Self.nonceCount else { throw fail(.malformed(message.name, byteCount: body.count)) }
    }

    /// Ends the exchange with `kind`: nothing more is taken.
    private mutating func fail(_ kind: PairingError.Kind) -> PairingError {
        state = .finished
        return PairingError(kind)
    }
}
