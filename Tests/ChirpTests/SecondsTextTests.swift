import Testing

@testable import Chirp
@testable import ChirpSupport

/// Durations in log metadata and messages, rounded to what a reader can use.
@Suite(.timeLimit(.minutes(1))) struct SecondsTextTests {
    @Test(arguments: [
        (0.1420944925622629, "0.14s"), (1.5, "1.5s"), (1.25, "1.3s"), (9.96, "10s"), (12.7, "13s"), (30, "30s"),
        (0, "0s"), (0.004, "0.004s"), (0.00123, "0.0012s"), (2, "2s"), (86_400, "86400s"), (-0.25, "-0.25s")
    ])
    func roundsToTwoSignificantDigits(_ seconds: Double, _ expected: String) {
        #expect(SecondsText.format(seconds) == expected)
    }
}
