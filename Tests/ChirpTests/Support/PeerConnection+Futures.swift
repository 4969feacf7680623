import NIOCore

@testable import Chirp
@testable import ChirpWire

/// What only the tests on `EmbeddedChannel` use: they run the loop by hand, so they queue without waiting and wait
/// on futures, not on `async` calls.
extension PeerConnection {
    /// Queues a complete frame. Returns `false` when it was not queued: the connection is closed or retired, or its
    /// queue is full.
    @discardableResult
    func enqueue(_ frame: ByteBuffer) -> Bool {
        submit(frame) == .accepted
    }

    /// Sends a request frame (built with `id`); the future completes with the response, or fails at the timeout or
    /// a disconnect.
    func request(id: UInt64, frame: ByteBuffer, timeout: TimeAmount) -> EventLoopFuture<ResponseBody> {
        let promise = eventLoop.makePromise(of: ResponseBody.self)
        startRequest(id: id, frame: frame, timeout: timeout, waiter: .promise(promise))
        return promise.futureResult
    }

    /// Sends a ping; the future completes when the matching pong arrives.
    func ping(timeout: TimeAmount) -> EventLoopFuture<Void> {
        let promise = eventLoop.makePromise(of: Void.self)
        startPing(timeout: timeout, waiter: .promise(promise))
        return promise.futureResult
    }
}
