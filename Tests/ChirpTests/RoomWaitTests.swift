import NIOConcurrencyHelpers
import NIOCore
import Testing

@testable import Chirp

/// `PeerConnection.waitForRoom()` (the waiting `send`'s wait) ends when its task is cancelled, whenever the
/// cancellation lands: before the wait is registered, while it registers, or after.
@Suite(.timeLimit(.minutes(3))) struct RoomWaitTests {
    /// Two parties meet, then go on together: each spins until both arrived (bounded: a party that never comes is
    /// not waited for past a few milliseconds, so that a busy pool cannot wedge the test).
    final class Barrier: Sendable {
        private let arrived = NIOLockedValueBox(0)
        func arriveAndWait() {
            arrived.withLockedValue { $0 += 1 }
            let deadline = ContinuousClock.now + .milliseconds(5)
            while arrived.withLockedValue({ $0 }) < 2, ContinuousClock.now < deadline {}
        }
    }

    @Test func aWaitForRoomCancelledAtAnyMomentEnds() async throws {
        let session = try PeerChannelHandlerTests.Session(outboundLimit: 1024)
        let connection = session.connection
        // Fill the queue past half its limit; the embedded loop does not run, so nothing drains it.
        #expect(connection.submit(ByteBuffer(repeating: 0, count: 900)) == .accepted)
        #expect(connection.submit(ByteBuffer(repeating: 0, count: 200)) == .full)
        // Whatever happens, the waits end with the test: closing the queue wakes every registered wait.
        defer { connection.outbound.close() }

        // The control: a wait that is not cancelled does not end while the queue stays full (checked after the
        // loop, which gives it all that time), and ends when it closes.
        let uncancelledEnded = NIOLockedValueBox(false)
        Task {
            await connection.waitForRoom()
            uncancelledEnded.withLockedValue { $0 = true }
        }

        for iteration in 0..<20000 {
            let barrier = Barrier()
            let (ended, end) = AsyncStream<Void>.makeStream()
            let waiter = Task {
                barrier.arriveAndWait()
                await connection.waitForRoom()
                end.yield()
            }
            barrier.arriveAndWait()
            // Sweep the cancellation across the waiter's first steps: a few more spins at each iteration.
            for _ in 0..<(iteration % 97) { _ = ContinuousClock.now }
            waiter.cancel()
            // Not `await waiter.value`: a lost cancellation would hang there, past any time limit.
            let didEnd: Void? = await valueWithin(.seconds(10)) {
                for await _ in ended { return () }
                return nil
            }
            guard didEnd != nil else {
                Issue.record("iteration \(iteration): a wait for room cancelled at the worst moment did not end")
                return
            }
        }
        #expect(!uncancelledEnded.withLockedValue { $0 })
        connection.outbound.close()
        #expect(await eventually(timeout: .seconds(10)) { uncancelledEnded.withLockedValue { $0 } })
    }
}
