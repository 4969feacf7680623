/// The bookkeeping of one connection's request/response exchanges that any thread touches: the ids of our requests
/// and pings, the replies we owe the peer, and the waits a sender announced that the event loop has not registered
/// yet (with those whose task was cancelled in between). A pure value: events in, results out; no lock, no channel.
///
/// Thread rule: any thread, behind the connection's one lock only. ``ConnectionOutbound`` holds it there beside the
/// ``OutboundQueue``, so that a reply is counted out in the lock acquisition that queues it, and a wait is registered
/// in the one that queues its frame (``ConnectionOutbound/admit(_:isReply:)``,
/// ``ConnectionOutbound/admitRegistered(id:_:)``); everything else goes through
/// ``ConnectionOutbound/withTickets(_:)``.
///
/// The rest of an exchange (the waiters of our requests and pings, their deadlines, the one timer) is the event loop's
/// ``ExchangeState``. The channel handler consults both: a retired connection closes only once neither has an
/// exchange in flight (``hasUnfinishedExchanges``, ``ExchangeState/isEmpty``).
///
/// A request or ping goes: ``makeRequestID()`` (or ``pingStarting()``, which also does the next step), then
/// ``waitStarting()`` before the sender's cancellation handler is installed, then, on the event loop,
/// ``waitRegistered(_:)`` just before its frame is queued. A cancellation in between (``waitCancelled(_:)``) makes
/// ``waitRegistered(_:)`` say so: the handler fails the wait without sending the frame.
struct ExchangeTickets {
    private var nextRequestID: UInt64 = 1
    /// Requests received on this connection whose reply has not been queued (or dropped) yet.
    private(set) var repliesOwed = 0
    /// Requests and pings sent from another thread whose wait the channel handler has not registered yet: until it
    /// has, a retired connection must not take itself for idle and close under them.
    private(set) var waitsUnregistered = 0
    /// Requests and pings whose task was cancelled while some wait was not registered yet, by id: the handler fails
    /// them when it gets to them, instead of sending them (``waitCancelled(_:)``). Empty but for that race.
    private(set) var cancelledBeforeRegistration: [UInt64] = []

    /// Whether a reply is owed or a wait is not registered yet: a retired connection is not idle.
    var hasUnfinishedExchanges: Bool { repliesOwed > 0 || waitsUnregistered > 0 }

    // MARK: Our requests and pings

    /// A new request id, unique on this connection (requests and pings draw from the same ids).
    mutating func makeRequestID() -> UInt64 {
        defer { nextRequestID &+= 1 }
        return nextRequestID
    }

    /// A request or ping is about to be handed to the event loop; ``waitRegistered(_:)`` follows there.
    mutating func waitStarting() { waitsUnregistered += 1 }

    /// A new ping's id (its nonce), its wait counted as starting (``waitStarting()``): one step for the two.
    mutating func pingStarting() -> UInt64 {
        waitStarting()
        return makeRequestID()
    }

    /// The event loop registers the wait announced by ``waitStarting()`` for request or ping `id`. Returns `false`
    /// when its task was cancelled before (``waitCancelled(_:)``): the caller fails it rather than send it.
    mutating func waitRegistered(_ id: UInt64) -> Bool {
        waitsUnregistered = max(0, waitsUnregistered - 1)
        guard !cancelledBeforeRegistration.isEmpty else { return true }
        var cancelled = false
        if let index = cancelledBeforeRegistration.firstIndex(of: id) {
            cancelledBeforeRegistration.remove(at: index)
            cancelled = true
        }
        // With no wait left unregistered, the ids left are of waits that were registered, and resolved, before their
        // cancellation was noted: nothing will ask for them.
        if waitsUnregistered == 0 { cancelledBeforeRegistration.removeAll() }
        return !cancelled
    }

    /// The task of request or ping `id` was cancelled. While some wait is not registered yet, `id` may be one of them
    /// (its task may be cancelled before the event loop got to it): it is noted, for ``waitRegistered(_:)``. A wait
    /// registered already is failed by the channel handler itself (``PeerChannelHandler/abandonRequest(id:error:)``).
    mutating func waitCancelled(_ id: UInt64) {
        guard waitsUnregistered > 0 else { return }
        cancelledBeforeRegistration.append(id)
    }

    // MARK: The peer's requests

    /// A request arrived on this connection: a retired connection stays open until its reply is queued.
    mutating func owesReply() { repliesOwed += 1 }

    /// A reply owed was queued, or could not be (the connection closed): it is no longer owed.
    mutating func replyEnded() { repliesOwed = max(0, repliesOwed - 1) }
}
