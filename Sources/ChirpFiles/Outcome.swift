import NIOConcurrencyHelpers

/// A result set once and awaited by any number of tasks.
final class Outcome<Value: Sendable>: Sendable {
    private struct State {
        var result: Result<Value, FileTransferError>?
        var waiters: [CheckedContinuation<Value, any Error>] = []
    }
    private let state = NIOLockedValueBox(State())

    /// Sets the result unless it is set already; returns whether it did.
    @discardableResult
    func set(_ result: Result<Value, FileTransferError>) -> Bool {
        let waiters: [CheckedContinuation<Value, any Error>]? = state.withLockedValue { state in
            guard state.result == nil else { return nil }
            state.result = result
            defer { state.waiters = [] }
            return state.waiters
        }
        guard let waiters else { return false }
        for waiter in waiters { waiter.resume(with: result.mapError { $0 as any Error }) }
        return true
    }

    var isSet: Bool { state.withLockedValue { $0.result != nil } }

    func value() async throws -> Value {
        try await withCheckedThrowingContinuation { continuation in
            let result: Result<Value, FileTransferError>? = state.withLockedValue { state in
                if let result = state.result { return result }
                state.waiters.append(continuation)
                return nil
            }
            if let result { continuation.resume(with: result.mapError { $0 as any Error }) }
        }
    }
}
