import Testing

@testable import ChirpTrust

/// The pairing exchange: honest sides agree on the code, a relay makes them disagree, and every message out of place
/// ends the exchange.
@Suite(.timeLimit(.minutes(1))) struct PairingExchangeTests {
    static let app = Fingerprint(spki: Array("app".utf8))
    static let tool = Fingerprint(spki: Array("tool".utf8))
    static let relayToTool = Fingerprint(spki: Array("relay shown to the tool".utf8))
    static let relayToApp = Fingerprint(spki: Array("relay shown to the app".utf8))

    /// A seeded generator: the same nonces on every run.
    struct SplitMix: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    /// Runs an exchange between `initiator` and `responder`, passing every message unchanged; returns their codes.
    static func run(
        _ initiator: inout PairingExchange, _ responder: inout PairingExchange
    ) throws -> (initiator: PairingCode?, responder: PairingCode?) {
        let commit = try initiator.start()
        let answer = try responder.receive(PairingMessage(bytes: commit.bytes) ?? commit)
        let nonce = try #require(answer.reply)
        let last = try initiator.receive(nonce)
        let reveal = try #require(last.reply)
        let done = try responder.receive(reveal)
        #expect(done.reply == nil)
        return (last.code, done.code)
    }

    @Test func twoHonestSidesShowTheSameCode() throws {
        for seed in UInt64(0)..<50 {
            var random = SplitMix(state: seed)
            var tool = PairingExchange(role: .initiator, own: Self.tool, peer: Self.app, using: &random)
            var app = PairingExchange(role: .responder, own: Self.app, peer: Self.tool, using: &random)
            let codes = try Self.run(&tool, &app)
            #expect(codes.initiator != nil)
            #expect(codes.initiator == codes.responder)
            #expect(codes.initiator?.description.count == 6)
        }
    }

    @Test func aRelayInTheMiddleMakesTheCodesDiffer() throws {
        // The relay terminates TLS on both sides and passes the messages on unchanged: each side sees the relay's
        // certificate as the other's.
        var differ = 0
        for seed in UInt64(0)..<50 {
            var random = SplitMix(state: seed)
            var tool = PairingExchange(role: .initiator, own: Self.tool, peer: Self.relayToTool, using: &random)
            var app = PairingExchange(role: .responder, own: Self.app, peer: Self.relayToApp, using: &random)
            let codes = try Self.run(&tool, &app)
            if codes.initiator != codes.responder { differ += 1 }
        }
        #expect(differ == 50)
    }

    @Test func theCodeMatchesAnIndependentComputation() {
        // Python: int.from_bytes(sha256(sha256(b"initiator") + sha256(b"responder") + b"\x01"*32 + b"\x02"*32)
        // .digest(), "big") % 10**6
        let code = PairingCode(
            initiator: Fingerprint(spki: Array("initiator".utf8)),
            responder: Fingerprint(spki: Array("responder".utf8)),
            initiatorNonce: [UInt8](repeating: 1, count: 32), responderNonce: [UInt8](repeating: 2, count: 32))
        #expect(code.description == "646522")
        #expect(
            PairingCode(initiator: Self.app, responder: Self.app, initiatorNonce: [], responderNonce: []).description
                .count == 6)
    }

    @Test func aRevealThatIsNotTheCommittedNonceIsRefused() throws {
        var random = SplitMix(state: 7)
        var tool = PairingExchange(role: .initiator, own: Self.tool, peer: Self.app, using: &random)
        var app = PairingExchange(role: .responder, own: Self.app, peer: Self.tool, using: &random)
        let commit = try tool.start()
        let nonce = try #require(try app.receive(commit).reply)
        guard case .reveal(var revealed) = try #require(try tool.receive(nonce).reply) else {
            Issue.record("no reveal")
            return
        }
        revealed[0] ^= 1
        #expect(throws: PairingError(.commitmentMismatch)) { try app.receive(.reveal(revealed)) }
        #expect(PairingError(.commitmentMismatch).description.contains("do not trust this device"))
        // Over after the failure, even for the right reveal.
        revealed[0] ^= 1
        #expect(throws: PairingError(.finished)) { try app.receive(.reveal(revealed)) }
    }

    @Test func messagesOutOfOrderEndTheExchange() throws {
        var random = SplitMix(state: 1)
        let body = [UInt8](repeating: 9, count: 32)

        var responder = PairingExchange(role: .responder, own: Self.app, peer: Self.tool, using: &random)
        #expect(throws: PairingError(.outOfOrder(expected: "commit", got: "reveal"))) {
            try responder.receive(.reveal(body))
        }
        #expect(throws: PairingError(.finished)) { try responder.receive(.commit(body)) }

        var other = PairingExchange(role: .responder, own: Self.app, peer: Self.tool, using: &random)
        #expect(throws: PairingError.self) { try other.start() }

        var initiator = PairingExchange(role: .initiator, own: Self.tool, peer: Self.app, using: &random)
        #expect(throws: PairingError.self) { try initiator.receive(.nonce(body)) }

        var twice = PairingExchange(role: .initiator, own: Self.tool, peer: Self.app, using: &random)
        _ = try twice.start()
        #expect(throws: PairingError(.outOfOrder(expected: "nonce", got: "start()"))) { try twice.start() }

        var short = PairingExchange(role: .responder, own: Self.app, peer: Self.tool, using: &random)
        #expect(throws: PairingError(.malformed("commit", byteCount: 31))) {
            try short.receive(.commit(Array(body.dropLast())))
        }
    }

    @Test func aFinishedExchangeIsNotReused() throws {
        var random = SplitMix(state: 3)
        var tool = PairingExchange(role: .initiator, own: Self.tool, peer: Self.app, using: &random)
        var app = PairingExchange(role: .responder, own: Self.app, peer: Self.tool, using: &random)
        _ = try Self.run(&tool, &app)
        #expect(throws: PairingError(.finished)) { try tool.start() }
        #expect(throws: PairingError(.finished)) { try app.receive(.commit([UInt8](repeating: 0, count: 32))) }
        #expect(throws: PairingError(.finished)) { try tool.receive(.nonce([UInt8](repeating: 0, count: 32))) }
    }

    @Test func messagesHaveAFixedByteLayout() {
        let body = (0..<32).map { UInt8($0) }
        #expect(PairingMessage.commit(body).bytes == [1] + body)
        #expect(PairingMessage.nonce(body).bytes == [2] + body)
        #expect(PairingMessage.reveal(body).bytes == [3] + body)
        for message in [PairingMessage.commit(body), .nonce(body), .reveal(body)] {
            #expect(PairingMessage(bytes: message.bytes) == message)
        }
        #expect(PairingMessage(bytes: [4] + body) == nil)
        #expect(PairingMessage(bytes: [1] + body.dropLast()) == nil)
        #expect(PairingMessage(bytes: []) == nil)
    }
}
