import NIOConcurrencyHelpers

/// Values collected from `@Sendable` handlers (a transceiver's `receive`, a log viewer's events), read by the test.
public final class Collected<T: Sendable>: Sendable {
    private let box = NIOLockedValueBox<[T]>([])

    public init() {}

    /// Adds one value.
    public func append(_ value: T) { box.withLockedValue { $0.append(value) } }

    /// Adds several values, in order.
    public func append(contentsOf values: [T]) { box.withLockedValue { $0.append(contentsOf: values) } }

    /// Everything collected so far, in order.
    public var values: [T] { box.withLockedValue { $0 } }

    /// Waits until at least `count` values are there (at most `timeout` seconds).
    public func waitForCount(_ count: Int, timeout: Double = 20) async throws {
        try await withTimeout(.seconds(timeout), "\(count) values (have \(self.values.count))") {
            while self.values.count < count { try await Task.sleep(for: .milliseconds(10)) }
        }
    }
}
