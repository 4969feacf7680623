/// Exponential backoff with jitter, the one Chirp uses wherever it tries again: dials to a peer that failed
/// (``dial``), a DNS-SD daemon that does not answer (``daemon``), resolves the daemon refused (``resolveRefusal``).
///
/// Pure: the random factor is passed in (``randomFactor()`` draws one), so the peer table and its tests stay
/// deterministic. Jitter keeps many peers that failed at the same moment (a daemon restart, a host that came back)
/// from retrying at the same moment too.
package struct Backoff: Sendable, Equatable {
    /// The first delay, in seconds.
    package var first: Double
    /// The longest delay, in seconds, before the factor.
    package var maximum: Double
    /// The range the random factor is drawn from.
    package var jitter: ClosedRange<Double> = 0.5...1.5

    /// The delay before try number `attempt` after the first failure (0: right after it), in seconds: `first`
    /// doubled `attempt` times, at most `maximum`, times `factor`.
    package func delay(attempt: Int, factor: Double) -> Double {
        min(first * Double(1 << min(max(attempt, 0), 30)), maximum) * factor
    }

    /// ``delay(attempt:factor:)`` as a `Duration`, to the millisecond.
    package func duration(attempt: Int, factor: Double) -> Duration {
        .milliseconds(Int((delay(attempt: attempt, factor: factor) * 1000).rounded()))
    }

    /// A random factor from ``jitter``.
    package func randomFactor() -> Double {
        jitter.lowerBound == jitter.upperBound ? jitter.lowerBound : Double.random(in: jitter)
    }

    /// Dials to a peer that failed or dropped soon after connecting: 0.1 s doubling to 30 s.
    package static let dial = Backoff(first: 0.1, maximum: 30)
    /// No DNS-SD daemon answers: 0.25 s doubling to 5 s.
    package static let daemon = Backoff(first: 0.25, maximum: 5)
    /// The daemon refused to start resolves: 0.25 s doubling to 5 s.
    package static let resolveRefusal = Backoff(first: 0.25, maximum: 5)
}
