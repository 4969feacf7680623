/// Runs `body`, then `teardown`, whether `body` returned or threw, and waits for both: a `defer` that can await.
/// For what a test starts and must have stopped before it ends, on every path (`defer { Task { await x.shutdown() } }`
/// does not wait: the stop would run after the test, into the next one).
///
/// ```swift
/// try await transceiver.start()
/// try await withTeardown {
///     try await exercise(transceiver)
/// } teardown: {
///     await transceiver.shutdown()
/// }
/// ```
public func withTeardown<T>(
    isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T, teardown: () async -> Void
) async throws -> T {
    let result: T
    do {
        result = try await body()
    } catch {
        await teardown()
        throw error
    }
    await teardown()
    return result
}
