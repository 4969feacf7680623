import NIOCore

/// Whoever waits for the answer to one request or ping of ours (``ExchangeState``), resolved exactly once on the
/// connection's event loop.
///
/// The ``Transceiver``'s requests and pings wait with the continuation of the task that sent them: nothing is
/// allocated for the wait (a promise would add its future and the callback that resumes the task), and the answer
/// resumes the task directly. The `EventLoopFuture` form serves code that is not async, such as the connection's
/// unit tests on an `EmbeddedChannel`.
enum ExchangeWaiter<Value: Sendable>: Sendable {
    case promise(EventLoopPromise<Value>)
    /// Resumed once: ``ExchangeState`` gives every waiter back exactly once, to its answer, its deadline or the
    /// close.
    case continuation(UnsafeContinuation<Value, any Error>)

    func succeed(_ value: Value) {
        switch self {
        case .promise(let promise): promise.succeed(value)
        case .continuation(let continuation): continuation.resume(returning: value)
        }
    }

    func fail(_ error: any Error) {
        switch self {
        case .promise(let promise): promise.fail(error)
        case .continuation(let continuation): continuation.resume(throwing: error)
        }
    }
}
