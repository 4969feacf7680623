import NIOConcurrencyHelpers

/// Tells the live streams (`/api/stream`) that the store or the sources changed. Each subscriber holds at most one
/// pending notice, whatever happens meanwhile: it asks the store for what is new, so a slow browser costs no memory.
final class ChangeNotifier: Sendable {
    /// What changed.
    enum Change: Sendable {
        case records
        case sources
        /// Nothing: a keep-alive tick.
        case tick
    }

    private struct State {
        var nextID = 0
        var subscribers: [Int: AsyncStream<Change>.Continuation] = [:]
        var finished = false
    }

    private let state = NIOLockedValueBox(State())

    /// A stream of notices for one subscriber; it ends when the notifier finishes (at once, when it has finished
    /// already) or the subscriber stops iterating.
    func subscribe() -> AsyncStream<Change> {
        let (stream, continuation) = AsyncStream.makeStream(of: Change.self, bufferingPolicy: .bufferingNewest(1))
        let id = state.withLockedValue { state -> Int? in
            guard !state.finished else { return nil }
            state.nextID += 1
            state.subscribers[state.nextID] = continuation
            return state.nextID
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLockedValue { $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Notifies every subscriber.
    func notify(_ change: Change) {
        for continuation in state.withLockedValue({ Array($0.subscribers.values) }) { continuation.yield(change) }
    }

    /// Ends every subscription, and those made later.
    func finish() {
        for continuation in state.withLockedValue({ state in
            defer {
                state.subscribers = [:]
                state.finished = true
            }
            return Array(state.subscribers.values)
        }) { continuation.finish() }
    }
}
