import NIOCore

/// The requests (or pings) a connection sent and waits on, matched to their answers by id, each with its deadline: a
/// pure state struct.
///
/// The connection's ``ExchangeState`` holds two (requests, pings). `Waiter` is whatever the owner resolves (an
/// ``ExchangeWaiter`` in Chirp, a string in tests); each method returns the waiters to resolve, and the table forgets
/// them, so that every waiter is resolved exactly once: by its answer, its deadline, or the close.
///
/// The table keeps the deadlines instead of a timer per exchange: its owner arms one timer for ``earliestDeadline``
/// and, when it fires, takes what ``expired(at:)`` gives back and arms the timer again for what is left. An answered
/// exchange leaves nothing to cancel, so a request costs no timer of its own (no scheduled task, no `timerfd` update
/// of the event loop): the timer fires about once per timeout, however many exchanges came and went meanwhile.
struct PendingExchanges<Waiter> {
    /// Each with its deadline, and where its frame ends in the connection's byte stream (``frameQueued(_:through:)``;
    /// `UInt64.max` until it is queued).
    private var waiting: [UInt64: (waiter: Waiter, deadline: NIODeadline, frameEnd: UInt64)] = [:]
    /// Set once the connection closed: nothing can wait from then on.
    private(set) var isClosed = false

    /// Nothing is in flight.
    var isEmpty: Bool { waiting.isEmpty }

    /// How many are in flight.
    var count: Int { waiting.count }

    /// The earliest deadline of what is in flight: when the owner's timer must fire next; `nil` when nothing is.
    var earliestDeadline: NIODeadline? { waiting.values.lazy.map(\.deadline).min() }

    /// Starts waiting on `id` until `deadline`. Returns `waiter` back when it cannot wait (the connection closed, or
    /// the id is in use): the caller fails it at once.
    mutating func add(_ id: UInt64, _ waiter: Waiter, deadline: NIODeadline) -> Waiter? {
        guard !isClosed, waiting[id] == nil else { return waiter }
        waiting[id] = (waiter, deadline, .max)
        return nil
    }

    /// The frame of `id` was queued, ending `end` bytes into the connection's byte stream
    /// (``OutboundQueue/queuedThrough``).
    mutating func frameQueued(_ id: UInt64, through end: UInt64) {
        // In place through the values' index: `waiting[id]?.frameEnd = end` costs three allocations per request
        // (`make alloc-check`).
        if let index = waiting.index(forKey: id) { waiting.values[index].frameEnd = end }
    }

    /// The answer to `id` arrived: the waiter to succeed, or `nil` for an id nobody waits on (ignored: a second
    /// answer, one that came after the deadline, or one nobody asked for).
    mutating func answered(_ id: UInt64) -> Waiter? {
        waiting.removeValue(forKey: id)?.waiter
    }

    /// The frame of `id` was not sent: the waiter to fail, or `nil` when it was resolved already.
    mutating func abandoned(_ id: UInt64) -> Waiter? {
        waiting.removeValue(forKey: id)?.waiter
    }

    /// The waiters whose deadline is `now` or earlier, in the order of their ids, to fail with a timeout; the table
    /// forgets them.
    mutating func expired(at now: NIODeadline) -> [Waiter] {
        let ids = waiting.filter { $0.value.deadline <= now }.keys.sorted()
        return ids.compactMap { waiting.removeValue(forKey: $0)?.waiter }
    }

    /// The connection closed: every waiter, to fail, in the order of their ids, each with where its frame ends in the
    /// byte stream (`UInt64.max` when it was not queued); nothing can wait from now on.
    mutating func close() -> [(waiter: Waiter, frameEnd: UInt64)] {
        isClosed = true
        defer { waiting = [:] }
        return waiting.keys.sorted().compactMap { id in waiting[id].map { ($0.waiter, $0.frameEnd) } }
    }
}
