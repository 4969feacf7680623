import Testing

@testable import ChirpTrust

/// The gate in front of the person who answers pairing requests: one at a time, a few a minute, on an injected clock.
@Suite(.timeLimit(.minutes(1))) struct PairingGateTests {
    /// A clock reading in seconds, for the gate.
    struct Instant: InstantProtocol {
        var offset: Duration
        func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        func duration(to other: Instant) -> Duration { other.offset - offset }
        static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
        static func at(_ seconds: Int) -> Instant { Instant(offset: .seconds(seconds)) }
    }

    @Test func oneRequestAtATime() {
        var gate = PairingGate<Instant>(limit: 6)
        #expect(gate.request(at: .at(0)) == nil)
        #expect(gate.request(at: .at(1)) == .busy)  // a person is being asked
        gate.finished()
        #expect(gate.request(at: .at(2)) == nil)  // the next one is
    }

    @Test func atMostTheLimitWithinTheWindowThenAgainOnceTheOldestLeftIt() {
        var gate = PairingGate<Instant>(limit: 2, window: .seconds(60))
        #expect(gate.request(at: .at(0)) == nil)
        gate.finished()
        #expect(gate.request(at: .at(10)) == nil)
        gate.finished()
        #expect(gate.request(at: .at(20)) == .tooMany(limit: 2, window: .seconds(60), retryAfter: .seconds(40)))
        #expect(gate.request(at: .at(59)) == .tooMany(limit: 2, window: .seconds(60), retryAfter: .seconds(1)))
        // The first left the window: one more.
        #expect(gate.request(at: .at(60)) == nil)
        gate.finished()
        #expect(gate.request(at: .at(61)) != nil)
        #expect(gate.request(at: .at(70)) == nil)  // the one at 10 s left too
    }

    @Test func refusedRequestsDoNotCountAgainstTheLimit() {
        var gate = PairingGate<Instant>(limit: 2)
        #expect(gate.request(at: .at(0)) == nil)
        for second in 1...20 { #expect(gate.request(at: .at(second)) == .busy) }
        gate.finished()
        #expect(gate.request(at: .at(21)) == nil)  // the second of the minute, the busy ones not counted
    }

    @Test func theRefusalsReadAsSentencesForTheDeviceThatAsked() {
        #expect(
            PairingGate<Instant>.Refusal.busy.description
                == "another pairing is waiting for an answer there; try again once it is over")
        #expect(
            PairingGate<Instant>.Refusal.tooMany(limit: 6, window: .seconds(60), retryAfter: .milliseconds(40_500))
                .description == "too many pairing requests (at most 6 in 60 s); try again in 41 s")
    }
}
