import NIOConcurrencyHelpers

/// Lets one task at a time through, in the order they arrived: the store's writer runs one transaction at a time
/// with it (an actor alone does not: it lets another call in while one awaits SQLite).
///
/// A task cancelled while it waits leaves the queue with a `CancellationError`; those behind it move up. A task that
/// finds the gate open goes through even when cancelled (what it then does is its own affair).
///
/// Written here because none of the project's dependencies has an async lock (NIO's and the standard library's
/// locks block a thread; one must not be held across an `await`).
final class FIFOGate: Sendable {
    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var open = true
        var waiters: [Waiter] = []
        var nextID: UInt64 = 0
    }

    private let state = NIOLockedValueBox(State())

    init() {}

    /// Waits for the turn of the calling task (every task that arrived before has left); ``leave()`` ends it.
    /// - Throws: `CancellationError` when the task is cancelled while it waits: it has no turn, and must not leave.
    nonisolated(nonsending) func enter() async throws {
        let id: UInt64? = state.withLockedValue { state in
            if state.open {
                state.open = false
                return nil
            }
            state.nextID += 1
            return state.nextID
        }
        guard let id else { return }  // open: through at once, without a suspension
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let admitted: Bool? = state.withLockedValue { state in
                    // The gate may have opened since the first look; cancellation before queueing is seen here
                    // (the flag is set before the handler runs, so the handler may have found nothing to remove).
                    if state.open {
                        state.open = false
                        return true
                    }
                    if Task.isCancelled { return false }
                    state.waiters.append(Waiter(id: id, continuation: continuation))
                    return nil
                }
                switch admitted {
                case true?: continuation.resume()
                case false?: continuation.resume(throwing: CancellationError())
                case nil: break
                }
            }
        } onCancel: {
            let waiter: Waiter? = state.withLockedValue { state in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index)
            }
            waiter?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Ends the turn of the calling task: the first waiter goes next, or the gate opens.
    func leave() {
        let next: Waiter? = state.withLockedValue { state in
            if state.waiters.isEmpty {
                state.open = true
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.continuation.resume()
    }

    /// How many tasks wait (for tests).
    var waiting: Int { state.withLockedValue { $0.waiters.count } }
}
