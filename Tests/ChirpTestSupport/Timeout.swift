/// A wait that did not end in time: what it waited for, and for how long.
public struct TimeoutError: Error, CustomStringConvertible {
    /// What the test waited for (with the output seen so far, where there is some).
    public var what: String
    /// How long it waited.
    public var timeout: Duration
    public init(what: String, timeout: Duration) {
        self.what = what
        self.timeout = timeout
    }
    public var description: String { "timed out after \(timeout) waiting for \(what)" }
}

/// Runs `body`, failing with ``TimeoutError`` after `timeout` (and cancelling `body`).
public func withTimeout<T: Sendable>(
    _ timeout: Duration, _ what: @autoclosure @escaping @Sendable () -> String,
    _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: timeout)
            throw TimeoutError(what: what(), timeout: timeout)
        }
        defer { group.cancelAll() }
        guard let first = try await group.next() else { throw TimeoutError(what: what(), timeout: timeout) }
        return first
    }
}

/// Checks `condition` every 20 ms until it holds; `false` if it still does not after `timeout`. For state that
/// announces no change (a counter, a Foundation `Process`); a ``TestProcess``'s own waits wake on its output instead.
public func eventually(timeout: Duration, _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return condition()
}
