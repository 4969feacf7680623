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

/// Runs `body`, failing with ``TimeoutError`` after `timeout`. The one race against a timeout in the tests: `body`
/// is cancelled then, and the wait ends at the deadline even if `body` ignores the cancellation (a blocking read, a
/// task that hangs: the test fails instead of hanging); the cancellation of the test ends the wait as well.
public func withTimeout<T: Sendable>(
    _ timeout: Duration, _ what: @autoclosure @escaping @Sendable () -> String,
    _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let (outcomes, sink) = AsyncStream.makeStream(of: Result<T, any Error>.self)
    let work = Task {
        do { sink.yield(.success(try await body())) } catch { sink.yield(.failure(error)) }
    }
    let timer = Task {
        try await Task.sleep(for: timeout)
        sink.yield(.failure(TimeoutError(what: what(), timeout: timeout)))
    }
    defer {
        work.cancel()
        timer.cancel()
    }
    return try await withTaskCancellationHandler {
        for await outcome in outcomes { return try outcome.get() }
        throw CancellationError()
    } onCancel: {
        sink.finish()
    }
}

/// `body`'s value, or `nil` when it does not end within `timeout` (it is cancelled then) or throws: for a test that
/// reports the missing value itself (`#require(await valueWithin(...), "...")`).
public func valueWithin<T: Sendable>(_ timeout: Duration, _ body: @escaping @Sendable () async throws -> T?) async -> T?
{
    (try? await withTimeout(timeout, "a value", body)) ?? nil
}

/// Checks `condition` every `interval` until it holds; throws ``TimeoutError`` naming `what` if it still does not
/// after `timeout`. For conditions that take a wait of their own to check (a process's answer, a file).
public func waitUntil(
    _ timeout: Duration, _ what: @autoclosure @escaping @Sendable () -> String,
    every interval: Duration = .milliseconds(20), _ condition: @escaping @Sendable () async throws -> Bool
) async throws {
    try await withTimeout(timeout, what()) {
        while try await !condition() { try await Task.sleep(for: interval) }
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
