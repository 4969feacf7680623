import Testing

@testable import Chirp
@testable import ChirpSupport

/// The one backoff of every retry (dials, the daemon, refused resolves).
@Suite(.timeLimit(.minutes(5))) struct BackoffTests {
    @Test func delaysDoubleFromTheFirstUpToTheMaximum() {
        let delays = (0..<11).map { Backoff.dial.delay(attempt: $0, factor: 1) }
        #expect(delays == [0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30, 30])
        #expect((0..<7).map { Backoff.daemon.delay(attempt: $0, factor: 1) } == [0.25, 0.5, 1, 2, 4, 5, 5])
        #expect(Backoff.dial.delay(attempt: 1_000, factor: 1) == 30, "no overflow on a long outage")
        #expect(Backoff.dial.duration(attempt: 3, factor: 1) == .milliseconds(800))
    }

    @Test func theFactorScalesEachDelayWithinTheJitterRange() {
        #expect(Backoff.dial.delay(attempt: 2, factor: 0.5) == 0.2)
        #expect(Backoff.dial.delay(attempt: 9, factor: 1.5) == 45)
        let factors = (0..<200).map { _ in Backoff.dial.randomFactor() }
        #expect(factors.allSatisfy { (0.5...1.5).contains($0) })
        #expect(Set(factors).count > 100, "drawn at random")
        #expect(Backoff(first: 1, maximum: 2, jitter: 1...1).randomFactor() == 1)
    }

    @Test func aPeerIsDialedAgainAfterItsJitteredBackoff() {
        var entry = PeerEntry<Int, ContinuousClock.Instant>(
            peer: Peer(id: "Z", name: "z", metadata: [:], host: nil, addresses: [], isConnected: false))
        #expect(entry.backoff(factor: 1.5) == .zero, "no wait before a failure")
        entry.failures = 3
        #expect(entry.backoff(factor: 1) == .milliseconds(400))
        #expect(entry.backoff(factor: 1.5) == .milliseconds(600))
    }
}
