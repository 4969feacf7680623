/// Which pairing requests a transceiver lets through to a person, as a pure state machine with an injected clock:
/// one at a time (a person answers one question at once), and at most ``limit`` started in any ``window`` (a
/// flood of requests must not become a flood of questions, nor wear a person into saying yes).
///
/// A request that is let in holds the gate until ``finished()``; one refused says why, in a sentence for the device
/// that asked.
package struct PairingGate<Instant: InstantProtocol>: Sendable where Instant.Duration == Swift.Duration {
    /// Why a request was not let in.
    package enum Refusal: Sendable, Equatable, CustomStringConvertible {
        /// Another pairing is waiting for its person's answer.
        case busy
        /// `limit` requests started within the window; the next may start after `retryAfter`.
        case tooMany(limit: Int, window: Duration, retryAfter: Duration)

        package var description: String {
            switch self {
            case .busy:
                return "another pairing is waiting for an answer there; try again once it is over"
            case .tooMany(let limit, let window, let retryAfter):
                let (whole, fraction) = retryAfter.components
                let seconds = max(1, Int((Double(whole) + Double(fraction) / 1e18).rounded(.up)))
                return
                    "too many pairing requests (at most \(limit) in \(window.components.seconds) s); try again in \(seconds) s"
            }
        }
    }

    /// At most this many requests start within ``window``.
    package let limit: Int
    /// The sliding window of ``limit``.
    package let window: Duration
    /// When the requests let in within the last window started, oldest first.
    private var started: [Instant] = []
    private var inProgress = false

    /// A gate that lets in at most `limit` requests (at least 1) within any `window`, one at a time.
    package init(limit: Int, window: Duration = .seconds(60)) {
        self.limit = max(1, limit)
        self.window = window
    }

    /// A request arrives `now`: nil when it is let in (the gate is then held until ``finished()``), else why not.
    package mutating func request(at now: Instant) -> Refusal? {
        started.removeAll { $0.advanced(by: window) <= now }
        if inProgress { return .busy }
        if started.count >= limit, let oldest = started.first {
            return .tooMany(limit: limit, window: window, retryAfter: now.duration(to: oldest.advanced(by: window)))
        }
        started.append(now)
        inProgress = true
        return nil
    }

    /// The request let in is over (paired, declined, failed or timed out): the next may start.
    package mutating func finished() {
        inProgress = false
    }
}
