import ChirpSupport
import Dispatch

/// The backoff used while no DNS-SD daemon answers (``Backoff/daemon``: 0.25 s doubling to 5 s, with jitter), with
/// the "unavailable" message reported once per outage. Touched on its owner's serial queue only.
struct DaemonRetry {
    private(set) var attempt = 0
    /// Whether this outage was reported already.
    private(set) var reportedUnavailable = false
    private var work: DispatchWorkItem?

    /// Schedules `action` on `queue` after the backoff delay. Returns the delay, and whether this is the first
    /// failure of the outage (the one to report).
    mutating func schedule(on queue: DispatchQueue, _ action: @escaping @Sendable () -> Void) -> (
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
