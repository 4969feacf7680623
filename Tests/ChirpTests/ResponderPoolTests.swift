import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import Testing

@testable import Chirp

/// Async responders: at most the limit at once, the rest in arrival order with their connection unread, every task
/// cancelled when the transceiver stops.
@Suite(.timeLimit(.minutes(5))) struct ResponderPoolTests {
    /// A job that waits until released, and records that it started and whether it saw cancellation.
    final class Gates: Sendable {
        let started = NIOLockedValueBox<[Int]>([])
        let cancelled = NIOLockedValueBox<[Int]>([])
        let releases = NIOLockedValueBox<[Int: CheckedContinuation<Void, Never>]>([:])

        func job(_ number: Int, connection: ObjectIdentifier, gate: LoopBoundGate? = nil) -> ResponderPool.Job {
            ResponderPool.Job(connection: connection, gate: gate) {
                self.started.withLockedValue { $0.append(number) }
                await withTaskCancellationHandler {
                    await withCheckedContinuation { continuation in
                        // Parked under the lock that onCancel takes: a cancellation is seen either here or there.
                        let cancelled = self.releases.withLockedValue { releases in
                            if self.cancelled.withLockedValue({ $0.contains(number) }) { return true }
                            releases[number] = continuation
                            return false
                        }
                        if cancelled { continuation.resume() }
                    }
                } onCancel: {
                    let parked = self.releases.withLockedValue { releases in
                        self.cancelled.withLockedValue { $0.append(number) }
                        return releases.removeValue(forKey: number)
                    }
                    parked?.resume()
                }
            }
        }

        /// Lets job `number` finish, once it is parked.
        func release(_ number: Int) async throws {
            try await withTimeout(.seconds(20), "job \(number) parked") {
                while true {
                    if let continuation = self.releases.withLockedValue({ $0.removeValue(forKey: number) }) {
                        return continuation.resume()
                    }
                    try await Task.sleep(for: .milliseconds(2))
                }
            }
        }

        func waitForStarted(_ count: Int) async throws {
            try await withTimeout(.seconds(20), "\(count) jobs started") {
                while self.started.withLockedValue({ $0.count }) < count { try await Task.sleep(for: .milliseconds(5)) }
            }
        }
    }

    /// Submits jobs 1 to `count`, all of one connection, to a pool of `limit`, and waits until `limit` of them run.
    func submitted(_ count: Int, limit: Int) async throws -> (ResponderPool, Gates, ObjectIdentifier) {
        let pool = ResponderPool(limit: limit)
        let jobs = Gates()
        let connection = ObjectIdentifier(Gates.self)
        for number in 1...count { pool.submit(jobs.job(number, connection: connection)) }
        try await jobs.waitForStarted(limit)
        return (pool, jobs, connection)
    }

    @Test func runsAtMostTheLimitAndTheRestInArrivalOrder() async throws {
        let (pool, jobs, _) = try await submitted(5, limit: 2)
        #expect(pool.counts.running == 2)
        #expect(pool.counts.waiting == 3)
        #expect(Set(jobs.started.withLockedValue { $0 }) == [1, 2])

        try await jobs.release(1)
        try await jobs.waitForStarted(3)
        #expect(jobs.started.withLockedValue { $0 }.last == 3)  // the oldest waiting one
        try await jobs.release(2)
        try await jobs.release(3)
        try await jobs.waitForStarted(5)
        #expect(Array(jobs.started.withLockedValue { $0 }.suffix(2)) == [4, 5])
        try await jobs.release(4)
        try await jobs.release(5)
        try await withTimeout(.seconds(20), "the pool empties") {
            while pool.counts.running > 0 { try await Task.sleep(for: .milliseconds(5)) }
        }
    }

    @Test func aConnectionWithWaitingRequestsIsNotRead() async throws {
        let pool = ResponderPool(limit: 1)
        let jobs = Gates()
        // The pool's tasks close and open the gate from their own threads: the channel's loop must be one that other
        // threads may use (NIOAsyncTestingChannel's, unlike EmbeddedChannel's), and the gate is read on it.
        let channel = NIOAsyncTestingChannel()
        let loop = channel.testingEventLoop
        let (bound, connection) = try await loop.executeInContext {
            let gate = ReadGate()
            try channel.pipeline.syncOperations.addHandler(gate)
            return (LoopBoundGate(gate, eventLoop: channel.eventLoop), ObjectIdentifier(gate))
        }
        @Sendable func gateIsClosed() throws -> Bool {
            try channel.pipeline.syncOperations.handler(type: ReadGate.self).isClosed
        }
        pool.submit(jobs.job(1, connection: connection, gate: bound))
        try await jobs.waitForStarted(1)
        await loop.run()
        // The positive control: a request that runs at once leaves the gate open.
        #expect(try await loop.executeInContext(gateIsClosed) == false)

        pool.submit(jobs.job(2, connection: connection, gate: bound))  // waits: the limit is 1
        await loop.run()
        #expect(try await loop.executeInContext(gateIsClosed) == true)

        try await jobs.release(1)
        try await jobs.waitForStarted(2)
        await loop.run()
        #expect(try await loop.executeInContext(gateIsClosed) == false)
        try await jobs.release(2)
        _ = try await channel.finish()
    }

    @Test func cancelAllCancelsTheRunningTasksAndDropsTheWaitingOnes() async throws {
        let (pool, jobs, connection) = try await submitted(3, limit: 2)
        pool.cancelAll()
        try await withTimeout(.seconds(20), "both running jobs cancelled") {
            while jobs.cancelled.withLockedValue({ $0.count }) < 2 { try await Task.sleep(for: .milliseconds(5)) }
        }
        #expect(Set(jobs.cancelled.withLockedValue { $0 }) == [1, 2])
        #expect(pool.counts.waiting == 0)
        pool.submit(jobs.job(4, connection: connection))  // after stop: not run
        #expect(pool.counts.running == 0)
        #expect(jobs.started.withLockedValue { $0 }.count == 2)
    }
}
