import NIOConcurrencyHelpers
import NIOCore

/// Runs the async responders of requests (`Transceiver.respond(to:with:)` (its async form)): at most
/// ``Configuration/maximumConcurrentResponders`` at once, the others waiting in arrival order.
///
/// While a request from a connection waits, that connection is not read (its ``ReadPause`` is closed): a peer that
/// sends requests faster than they are answered fills its own socket and queue, not this process. Every task it
/// started is cancelled by ``cancelAll()``, when the transceiver stops.
final class ResponderPool: Sendable {
    /// One request to answer.
    struct Job: Sendable {
        /// The connection the request came on.
        var connection: ObjectIdentifier
        var gate: (any ReadPause)?
        var run: @Sendable () async -> Void
    }

    private struct State {
        var running: [UInt64: Task<Void, Never>] = [:]
        var nextID: UInt64 = 0
        var waiting = CircularBuffer<Job>()
        /// Requests waiting per connection; a connection's gate is closed while it has any.
        var waitingPerConnection: [ObjectIdentifier: Int] = [:]
        var stopped = false
    }

    /// How many responders may run at once.
    let limit: Int
    private let state = NIOLockedValueBox(State())

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// How many responders run now, and how many requests wait (for tests and metrics).
    var counts: (running: Int, waiting: Int) { state.withLockedValue { ($0.running.count, $0.waiting.count) } }

    /// Runs `job` now if fewer than ``limit`` run, else queues it and stops reading its connection.
    func submit(_ job: Job) {
        let closeGate = state.withLockedValue { state -> (any ReadPause)? in
            if state.stopped { return nil }
            if state.running.count < limit {
                start(job, in: &state)
                return nil
            }
            state.waiting.append(job)
            state.waitingPerConnection[job.connection, default: 0] += 1
            return state.waitingPerConnection[job.connection] == 1 ? job.gate : nil
        }
        closeGate?.close(for: key)
    }

    /// Cancels every running responder and forgets the waiting ones (their connections are closing); reading resumes
    /// on the connections it paused.
    func cancelAll() {
        let (tasks, gates) = state.withLockedValue { state in
            state.stopped = true
            let gates = state.waiting.compactMap(\.gate)
            defer {
                state.running = [:]
                state.waiting.removeAll()
                state.waitingPerConnection = [:]
            }
            return (Array(state.running.values), gates)
        }
        for task in tasks { task.cancel() }
        for gate in gates { gate.open(for: key) }
    }

    private var key: ObjectIdentifier { ObjectIdentifier(self) }

    /// Starts `job` (called with the lock held: the task cannot report its end before it is recorded).
    private func start(_ job: Job, in state: inout State) {
        state.nextID += 1
        let id = state.nextID
        state.running[id] = Task {
            await job.run()
            self.finished(id)
        }
    }

    private func finished(_ id: UInt64) {
        let openGate = state.withLockedValue { state -> (any ReadPause)? in
            guard state.running.removeValue(forKey: id) != nil, !state.stopped, let next = state.waiting.popFirst()
            else {
                return nil
            }
            start(next, in: &state)
            let left = (state.waitingPerConnection[next.connection] ?? 1) - 1
            state.waitingPerConnection[next.connection] = left > 0 ? left : nil
            return left > 0 ? nil : next.gate
        }
        openGate?.open(for: key)
    }
}
