import ChirpWire
import NIOCore

/// Our requests and pings in flight: the handler forwards their events to its ``ExchangeState`` and carries out what it
/// returns (resolves the waiters, arms or cancels the one timer, tells the lifecycle an exchange ended).
extension PeerChannelHandler {
    /// Waits for the response to request `id`, at most `timeout` from now on `eventLoop` (this handler's).
    func awaitResponse(
        id: UInt64, waiter: ExchangeWaiter<ResponseBody>, timeout: TimeAmount, on eventLoop: any EventLoop
    ) {
        started(exchanges.startRequest(id, waiter, timeout: timeout, now: eventLoop.now), on: eventLoop)
    }

    /// The frame of request `id` was queued, ending `end` bytes into the connection's byte stream.
    func requestQueued(id: UInt64, through end: UInt64) {
        exchanges.requestQueued(id, through: end)
    }

    /// Waits for the pong to ping `id`, at most `timeout` from now on `eventLoop` (this handler's).
    func awaitPong(id: UInt64, waiter: ExchangeWaiter<Void>, timeout: TimeAmount, on eventLoop: any EventLoop) {
        started(exchanges.startPing(id, waiter, timeout: timeout, now: eventLoop.now), on: eventLoop)
    }

    /// Carries out what starting an exchange returned.
    private func started<Value>(
        _ start: ExchangeState<ExchangeWaiter<ResponseBody>, ExchangeWaiter<Void>>.Start<ExchangeWaiter<Value>>,
        on eventLoop: any EventLoop
    ) {
        switch start {
        case .waiting:
            break
        case .waitingArmTimer(let deadline):
            armExpiryCheck(at: deadline, on: eventLoop)
        case .refused(let waiter):
            // The connection closed before the frame was queued: nothing was sent, and the caller may try the peer's
            // current connection.
            waiter.fail(FrameNotQueuedError())
        }
    }

    /// Arms the exchanges' timer for `deadline`, in place of the one armed.
    private func armExpiryCheck(at deadline: NIODeadline, on eventLoop: any EventLoop) {
        expiryCheck?.cancel()
        expiryCheck = nil
        do {
            expiryCheck = try eventLoop.assumeIsolated().scheduleCallback(
                at: deadline, handler: ExpiryCheck(handler: self))
        } catch {
            // The event loop is shutting down: its channels close, and the close fails what is in flight.
            exchanges.timerNotArmed()
        }
    }

    /// The timer fired: fails the requests and pings whose deadline passed with a ``RequestTimeoutError``, and arms
    /// the timer again for the earliest deadline left. An answered exchange left no timer to cancel, so this often
    /// finds nothing to fail.
    fileprivate func expireExchanges(on eventLoop: some EventLoop) {
        expiryCheck = nil
        let expiry = exchanges.timerFired(now: eventLoop.now)
        for waiter in expiry.requests { answered(waiter) { $0.fail(RequestTimeoutError()) } }
        for waiter in expiry.pings { answered(waiter) { $0.fail(RequestTimeoutError()) } }
        // Unless an exchange's end closed the connection meanwhile (the close cancelled the timer).
        if let next = expiry.nextTimer, exchanges.timerDeadline == next { armExpiryCheck(at: next, on: eventLoop) }
    }

    /// The exchanges' timer (``expireExchanges(on:)``). A callback rather than a task: NIO schedules it without a
    /// promise.
    struct ExpiryCheck: NIOScheduledCallbackHandler {
        let handler: PeerChannelHandler

        func handleScheduledCallback(eventLoop: some EventLoop) {
            handler.expireExchanges(on: eventLoop)
        }
    }

    /// The connection closed: fails every request and ping in flight with a ``ConnectionClosedError``, each request's
    /// saying whether its frame had reached the socket, and whether the peer said it was stopping.
    func failExchanges() {
        let closing = exchanges.close(handedOver: connection?.outbound.handedOver ?? HandedOver(bytes: 0))
        if closing.cancelTimer { expiryCheck?.cancel() }
        expiryCheck = nil
        let peerStopping = lifecycle.peerIsStopping
        for (waiter, delivery) in closing.requests {
            waiter.fail(ConnectionClosedError(delivery: delivery, peerStopping: peerStopping))
        }
        for waiter in closing.pings { waiter.fail(ConnectionClosedError()) }
    }

    /// Request `id` failed before its response: its frame was not queued.
    func abandonRequest(id: UInt64, error: any Error) {
        answered(exchanges.requestAbandoned(id)) { $0.fail(error) }
    }

    /// Ping `id` failed before its pong: its frame was not queued.
    func abandonPing(id: UInt64, error: any Error) {
        answered(exchanges.pingAbandoned(id)) { $0.fail(error) }
    }

    /// Resolves a waiter the exchanges gave back (if any), then lets the lifecycle know an exchange ended.
    func answered<Value>(_ waiter: ExchangeWaiter<Value>?, _ resolve: (ExchangeWaiter<Value>) -> Void) {
        guard let waiter else { return }
        resolve(waiter)
        exchangeEnded()
    }

    /// How many of our requests and pings wait for their answer.
    var exchangesWaiting: Int { exchanges.count }
}
