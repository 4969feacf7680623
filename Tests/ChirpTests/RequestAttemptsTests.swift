import Testing

@testable import Chirp

/// The decision on a request whose connection closed before its reply: sent again once when that is safe, else a
/// failure whose reason says what happened. A value: no connection, no clock.
@Suite(.timeLimit(.minutes(1))) struct RequestAttemptsTests {
    static func plain() -> RequestAttempts { RequestAttempts(typeName: "tests.Add", isIdempotent: false) }
    static func idempotent() -> RequestAttempts { RequestAttempts(typeName: "tests.List", isIdempotent: true) }

    @Test func aRequestThatNeverReachedTheSocketIsSentAgainWhateverItsType() {
        var attempts = Self.plain()
        #expect(attempts.connectionClosed(.notSent, peerStopping: false) == .retry)
        var idempotent = Self.idempotent()
        #expect(idempotent.connectionClosed(.notSent, peerStopping: false) == .retry)
    }

    @Test func aSentRequestIsSentAgainOnlyWhenIdempotent() {
        var idempotent = Self.idempotent()
        #expect(idempotent.connectionClosed(.sent, peerStopping: false) == .retry)
        var plain = Self.plain()
        #expect(
            plain.connectionClosed(.sent, peerStopping: false)
                == .fail(
                    reason: "the request had been sent, so the peer may have run it; it was not sent again, since "
                        + "tests.Add is not an IdempotentRequest"))
    }

    @Test func itIsSentAgainOnceAndTheReasonSaysWhetherAnyAttemptMayHaveRun() {
        var attempts = Self.idempotent()
        #expect(attempts.connectionClosed(.sent, peerStopping: false) == .retry)
        // The second attempt never reached the socket, but the first did: the peer may have run it.
        #expect(
            attempts.connectionClosed(.notSent, peerStopping: false)
                == .fail(
                    reason: "it was sent again on the peer's next connection, which closed too; the request had been "
                        + "sent, so the peer may have run it"))
        var neverSent = Self.plain()
        #expect(neverSent.connectionClosed(.notSent, peerStopping: false) == .retry)
        #expect(
            neverSent.connectionClosed(.notSent, peerStopping: false)
                == .fail(
                    reason: "it was sent again on the peer's next connection, which closed too; the request was not "
                        + "sent, so it did not run"))
    }

    @Test func aPeerThatIsStoppingIsNotWaitedFor() {
        var attempts = Self.idempotent()
        #expect(
            attempts.connectionClosed(.notSent, peerStopping: true)
                == .fail(reason: "the peer is stopping; the request was not sent, so it did not run"))
    }

    @Test func aMissedReconnectionSaysWhyAndWhetherThePeerMayHaveRunIt() {
        var attempts = Self.plain()
        _ = attempts.connectionClosed(.notSent, peerStopping: false)
        #expect(
            attempts.reconnectionMissed(.timedOut(seconds: 2.5))
                == "the request was not sent, so it did not run; the peer did not connect again within the 2.5s left")
        #expect(
            attempts.reconnectionMissed(.peerGone)
                == "the request was not sent, so it did not run; the peer is gone (it no longer advertises itself)")
        var sent = Self.idempotent()
        _ = sent.connectionClosed(.sent, peerStopping: false)
        #expect(
            sent.reconnectionMissed(.stopped)
                == "the request had been sent, so the peer may have run it; this transceiver stopped")
    }
}
