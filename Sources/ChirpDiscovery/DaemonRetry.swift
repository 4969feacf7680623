import ChirpSupport
import Dispatch
import Logging

/// The backoff used while no DNS-SD daemon answers (``Backoff/daemon``: 0.25 s doubling to 5 s, with jitter), with
/// the "unavailable" message reported once per outage. Touched on its owner's serial queue only.
struct DaemonRetry {
    private(set) var attempt = 0
    /// Whether this outage was reported already.
    private(set) var reportedUnavailable = false
    private var work: DispatchWorkItem?

    /// Schedules `action` on `queue` after the backoff delay. Returns the delay, and whether this is the first
    /// failure of the outage (the one to report).
    private mutating func schedule(on queue: DispatchQueue, _ action: @escaping @Sendable () -> Void) -> (
        delay: Double, first: Bool
    ) {
        let delay = Backoff.daemon.delay(attempt: attempt, factor: Backoff.daemon.randomFactor())
        attempt += 1
        let first = !reportedUnavailable
        reportedUnavailable = true
        let work = DispatchWorkItem(block: action)
        self.work = work
        queue.asyncAfter(deadline: .now() + delay, execute: work)
        return (delay, first)
    }

    /// The daemon failed with `error`: schedules `restart` on `queue` after the backoff delay, and logs the error with
    /// `metadata` and the delay, at error level on the first failure of the outage (then returns `true`: the one to
    /// report), at debug level after that.
    mutating func failed(
        _ error: DNSSDError, on queue: DispatchQueue, logger: Logger, metadata: Logger.Metadata,
        restart: @escaping @Sendable () -> Void
    ) -> Bool {
        let (delay, first) = schedule(on: queue, restart)
        let retryIn = SecondsText.format(delay)
        if first {
            logger.error("\(error.description)", metadata: metadata.merging(["retry-in": "\(retryIn)"]) { $1 })
        } else {
            logger.debug("DNS-SD still unavailable; retrying", metadata: ["retry-in": "\(retryIn)"])
        }
        return first
    }

    /// The daemon answered: the next outage starts from the shortest delay. Returns whether an outage was reported.
    @discardableResult
    mutating func succeeded() -> Bool {
        defer {
            attempt = 0
            reportedUnavailable = false
        }
        return reportedUnavailable
    }

    /// Cancels the scheduled attempt, if any.
    mutating func cancel() {
        work?.cancel()
        work = nil
    }
}
