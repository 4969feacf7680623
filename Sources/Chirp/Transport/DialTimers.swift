/// The dial timer of each peer, the newest the peer table scheduled: the timer of an older generation never replaces
/// it.
///
/// The engine carries out the table's actions outside its lock, so two threads can carry out a peer's
/// `scheduleDial` actions in the other order: a connection's close schedules a dial (to wait for a resolve's answer)
/// and asks for the resolve; the answer, back within a millisecond, schedules the dial again at once on another
/// thread, before the first thread got to its timer. Had the first timer replaced (and cancelled) the second, only a
/// timer of a generation the table no longer waits for would be left, and the peer would not be dialed again.
struct DialTimers<Timer> {
    private var timers: [String: (generation: UInt64, timer: Timer)] = [:]

    /// Keeps `timer` for `peerID` unless a newer generation's timer is kept already. Returns the timer to cancel: the
    /// one replaced, or `timer` itself when it is the older one.
    mutating func keep(_ timer: Timer, generation: UInt64, for peerID: String) -> Timer? {
        if let kept = timers[peerID], kept.generation > generation { return timer }
        defer { timers[peerID] = (generation, timer) }
        return timers[peerID]?.timer
    }

    /// Every timer kept, emptied.
    mutating func removeAll() -> [Timer] {
        defer { timers = [:] }
        return timers.values.map(\.timer)
    }
}

extension DialTimers: Sendable where Timer: Sendable {}
