/// The requests (or pings) a connection sent and waits on, matched to their answers by id: a pure state struct.
///
/// Owned by the connection's ``PeerChannelHandler`` and touched on its event loop only. `Waiter` is whatever the
/// owner resolves (a promise and its timer in Chirp, a number in tests); each method returns the waiter to resolve,
/// and the table forgets it, so that every waiter is resolved exactly once: by its answer, its timeout, or the close.
struct PendingExchanges<Waiter> {
    private var waiting: [UInt64: Waiter] = [:]
    /// Set once the connection closed: nothing can wait from then on.
    private(set) var isClosed = false

    /// Nothing is in flight.
    var isEmpty: Bool { waiting.isEmpty }

    /// How many are in flight.
    var count: Int { waiting.count }

    /// Starts waiting on `id`. Returns `waiter` back when it cannot wait (the connection closed, or the id is in
    /// use): the caller fails it at once.
    mutating func add(_ id: UInt64, _ waiter: Waiter) -> Waiter? {
        guard !isClosed, waiting[id] == nil else { return waiter }
        waiting[id] = waiter
        return nil
    }

    /// The answer to `id` arrived: the waiter to succeed, or `nil` for an id nobody waits on (ignored).
    mutating func answered(_ id: UInt64) -> Waiter? {
        waiting.removeValue(forKey: id)
    }

    /// The wait on `id` timed out, or its frame was not sent: the waiter to fail, or `nil` when it was answered.
    mutating func abandoned(_ id: UInt64) -> Waiter? {
        waiting.removeValue(forKey: id)
    }

    /// The connection closed: every waiter, to fail; nothing can wait from now on.
    mutating func close() -> [Waiter] {
        isClosed = true
        defer { waiting = [:] }
        return Array(waiting.values)
    }
}
