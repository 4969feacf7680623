import ChirpSupport

/// Decides which sighted instances are resolved, and when: a few at a time, in the order they were sighted.
///
/// With Avahi's compatibility layer every DNS-SD reference (each resolve, each address query) opens a system-bus
/// connection of its own, and dbus-daemon allows 256 connections per user by default, shared by every process of
/// that user. A transceiver that started one resolve per instance at once could take them all (64 peers on one host
/// would ask for 4,032), and every refused connection costs the single-threaded bus as much as an accepted one. So
/// resolves wait for one of ``limit`` slots. When the daemon refuses to start one (`kDNSServiceErr_Refused`), the
/// slots are halved (down to one), the refused instance goes back to the front of the line and no resolve starts
/// until a backoff has passed (0.25 s doubling up to 5 s, with jitter); every resolve that completes gives a slot
/// back, up to ``maximum``.
///
/// Instances put in line with `later: true` wait behind all the others: a transceiver resolves first the peers it
/// will dial itself, and the peers that dial it are often connected, and no longer need resolving, by their turn.
///
/// A value type with no clock of its own: its owner (``ServiceDiscovery``, on its serial queue) starts what
/// ``next()`` returns and schedules the end of a pause.
struct ResolveScheduler {
    /// The most resolves in flight at once.
    let maximum: Int
    /// The resolves allowed in flight now: ``maximum`` at first, halved by each refusal, one more per completion.
    private(set) var limit: Int
    /// Instances in flight (a resolve or its address queries hold DNS-SD references).
    private(set) var running: Set<String> = []
    /// Instances waiting for a slot, first come first served.
    private(set) var waiting: [String] = []
    /// Instances waiting behind all of ``waiting``.
    private(set) var waitingLater: [String] = []
    /// Whether starts are held back after a refusal, until ``resume()``.
    private(set) var isPaused = false
    /// Refusals since the last completed resolve, for the backoff.
    private var refusalStreak = 0

    /// - Parameter maximum: the most resolves in flight at once (at least 1).
    init(maximum: Int) {
        self.maximum = max(1, maximum)
        self.limit = self.maximum
    }

    /// Puts `name` in line (at the back of its lane), unless it is waiting or running already.
    mutating func enqueue(_ name: String, later: Bool = false) {
        guard !contains(name) else { return }
        if later { waitingLater.append(name) } else { waiting.append(name) }
    }

    /// Whether `name` is waiting or running.
    func contains(_ name: String) -> Bool {
        running.contains(name) || waiting.contains(name) || waitingLater.contains(name)
    }

    /// The next instance to resolve, now marked running; `nil` while paused, full or with nobody waiting.
    mutating func next() -> String? {
        guard !isPaused, running.count < limit else { return nil }
        let name: String
        if !waiting.isEmpty {
            name = waiting.removeFirst()
        } else if !waitingLater.isEmpty {
            name = waitingLater.removeFirst()
        } else {
            return nil
        }
        running.insert(name)
        return name
    }

    /// `name` no longer holds a slot: it was resolved (`succeeded`), failed or timed out (its owner may enqueue it
    /// again). A success gives one slot back and ends the backoff streak.
    mutating func finished(_ name: String, succeeded: Bool) {
        guard running.remove(name) != nil else { return }
        if succeeded {
            limit = min(maximum, limit + 1)
            refusalStreak = 0
        }
    }

    /// The daemon refused to start `name`'s resolve or address query: it goes back to the front of the line, the
    /// slots are halved, and starts pause. Returns the pause to wait before calling ``resume()``, or `nil` when a
    /// pause is already under way (its end will resume).
    mutating func refused(_ name: String, jitter: Double = Backoff.resolveRefusal.randomFactor()) -> Double? {
        remove(name)
        waiting.insert(name, at: 0)
        guard !isPaused else { return nil }
        limit = max(1, limit / 2)
        isPaused = true
        let delay = Backoff.resolveRefusal.delay(attempt: refusalStreak, factor: jitter)
        refusalStreak += 1
        return delay
    }

    /// Ends a pause started by ``refused(_:jitter:)``.
    mutating func resume() {
        isPaused = false
    }

    /// `name` is gone, or no longer needs resolving: forgets it, waiting or running.
    mutating func remove(_ name: String) {
        running.remove(name)
        waiting.removeAll { $0 == name }
        waitingLater.removeAll { $0 == name }
    }

    /// Forgets everything (discovery torn down); the slots start again at ``maximum``.
    mutating func reset() {
        self = ResolveScheduler(maximum: maximum)
    }
}
