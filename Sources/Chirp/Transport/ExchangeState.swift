import NIOCore

/// The requests and pings one connection sent and waits on, and the one timer that fails them at their deadlines: a
/// pure state machine. Events in, actions out, the time given with each event that needs it (`now`); no timer, no
/// channel, no lock.
///
/// Owned by the connection's ``PeerChannelHandler`` and touched on its event loop only. The handler carries out what
/// each event returns: it resolves the waiters given back (each exactly once: by its answer, its deadline, its
/// abandonment or the close), arms or cancels its one timer, and tells its ``ConnectionLifecycle`` that an exchange
/// ended. `RequestWaiter` and `PingWaiter` are whatever the owner resolves (``ExchangeWaiter`` in Chirp, strings in
/// tests).
///
/// The table keeps the deadlines instead of a timer per exchange (``PendingExchanges``): the timer is armed for the
/// earliest deadline, and brought forward only when an earlier one comes. An answered exchange leaves nothing to
/// cancel, so the timer fires about once per timeout, however many exchanges came and went meanwhile.
///
/// What other threads touch before the event loop gets to an exchange (the request ids, the waits not registered yet,
/// the replies owed to the peer) is the connection's ``ExchangeTickets``, behind its one lock; the handler consults
/// both for whether an exchange is in flight (``PeerChannelHandler/exchangesInFlight``).
struct ExchangeState<RequestWaiter, PingWaiter> {
    private var requests = PendingExchanges<RequestWaiter>()
    private var pings = PendingExchanges<PingWaiter>()
    /// When the armed timer fires; `nil` when none is armed.
    private(set) var timerDeadline: NIODeadline?

    /// What the owner does once an exchange was handed to ``startRequest(_:_:timeout:now:)`` or
    /// ``startPing(_:_:timeout:now:)``.
    enum Start<Waiter> {
        /// It waits; the timer fires by its deadline already.
        case waiting
        /// It waits; the timer is to fire at this deadline (the one armed, if any, is cancelled).
        case waitingArmTimer(NIODeadline)
        /// It cannot wait (the connection closed, or its id is in use): fail it at once, nothing was sent.
        case refused(Waiter)
    }

    /// What the timer's firing expired: the waiters to fail with a timeout, and when the timer is to fire next.
    struct Expiry {
        var requests: [RequestWaiter]
        var pings: [PingWaiter]
        var nextTimer: NIODeadline?
    }

    /// What the close left: the waiters to fail (each request with whether its frame reached the socket), and
    /// whether the armed timer is to be cancelled.
    struct Closing {
        var requests: [(waiter: RequestWaiter, delivery: RequestDelivery)]
        var pings: [PingWaiter]
        var cancelTimer: Bool
    }

    /// Nothing of ours is in flight.
    var isEmpty: Bool { requests.isEmpty && pings.isEmpty }

    /// How many requests and pings of ours wait for their answer.
    var count: Int { requests.count + pings.count }

    /// Request `id` waits for its response until `timeout` after `now`.
    mutating func startRequest(_ id: UInt64, _ waiter: RequestWaiter, timeout: TimeAmount, now: NIODeadline)
        -> Start<RequestWaiter>
    {
        let deadline = now + timeout
        if let refused = requests.add(id, waiter, deadline: deadline) { return .refused(refused) }
        return armTimer(by: deadline)
    }

    /// Ping `id` waits for its pong until `timeout` after `now`.
    mutating func startPing(_ id: UInt64, _ waiter: PingWaiter, timeout: TimeAmount, now: NIODeadline)
        -> Start<PingWaiter>
    {
        let deadline = now + timeout
        if let refused = pings.add(id, waiter, deadline: deadline) { return .refused(refused) }
        return armTimer(by: deadline)
    }

    /// The timer is to fire by `deadline`: it stays as it is when it fires earlier already.
    private mutating func armTimer<Waiter>(by deadline: NIODeadline) -> Start<Waiter> {
        if let armed = timerDeadline, armed <= deadline { return .waiting }
        timerDeadline = deadline
        return .waitingArmTimer(deadline)
    }

    /// The frame of request `id` was queued, with the mark `end` (``OutboundQueue/endMark(ofFrameSized:)``): at the
    /// close, it tells whether the frame was handed to the socket (``HandedOver``).
    mutating func requestQueued(_ id: UInt64, through end: UInt64) {
        requests.frameQueued(id, through: end)
    }

    /// The response to request `id` arrived: the waiter to succeed, or `nil` for an id nobody waits on (ignored: a
    /// second answer, one that came after the deadline, or one nobody asked for).
    mutating func responseArrived(_ id: UInt64) -> RequestWaiter? {
        requests.answered(id)
    }

    /// The pong to ping `id` arrived: the waiter to succeed, or `nil` for an id nobody waits on.
    mutating func pongArrived(_ id: UInt64) -> PingWaiter? {
        pings.answered(id)
    }

    /// Request `id` ended before its response (its frame was not queued, or its task was cancelled): the waiter to
    /// fail, or `nil` when it was resolved already.
    mutating func requestAbandoned(_ id: UInt64) -> RequestWaiter? {
        requests.abandoned(id)
    }

    /// Ping `id` ended before its pong: the waiter to fail, or `nil` when it was resolved already.
    mutating func pingAbandoned(_ id: UInt64) -> PingWaiter? {
        pings.abandoned(id)
    }

    /// The timer fired at `now`: what passed its deadline, in the order of the ids, and when the timer is to fire
    /// next (the earliest deadline left), if at all.
    mutating func timerFired(now: NIODeadline) -> Expiry {
        timerDeadline = nil
        let expired = Expiry(requests: requests.expired(at: now), pings: pings.expired(at: now), nextTimer: nil)
        guard let next = Self.earliest(requests.earliestDeadline, pings.earliestDeadline) else { return expired }
        timerDeadline = next
        return Expiry(requests: expired.requests, pings: expired.pings, nextTimer: next)
    }

    /// The timer could not be armed (the event loop is shutting down: its channels close, and the close fails what
    /// is in flight).
    mutating func timerNotArmed() {
        timerDeadline = nil
    }

    /// The connection closed, `handedOver` of what it queued handed to the socket (``OutboundQueue/handedOver``):
    /// every waiter, to fail, each request with whether its frame was handed over (``RequestDelivery``); nothing can
    /// wait from now on.
    mutating func close(handedOver: HandedOver) -> Closing {
        let cancelTimer = timerDeadline != nil
        timerDeadline = nil
        let closed = requests.close().map { request in
            (request.waiter, handedOver.includes(request.frameEnd) ? RequestDelivery.sent : .notSent)
        }
        return Closing(requests: closed, pings: pings.close().map(\.waiter), cancelTimer: cancelTimer)
    }

    private static func earliest(_ a: NIODeadline?, _ b: NIODeadline?) -> NIODeadline? {
        switch (a, b) {
        case (let a?, let b?): return min(a, b)
        case (let a?, nil): return a
        case (nil, let b): return b
        }
    }
}
