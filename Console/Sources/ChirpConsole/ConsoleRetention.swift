/// How much the store keeps. Records are removed oldest first once either limit is passed, and counted.
public struct ConsoleRetention: Sendable, Equatable {
    /// The most bytes of records (their text: message, label, metadata, HTTP exchange) kept. Default: 1 GiB.
    public var maximumBytes: Int
    /// Records older than this are removed. Default: 7 days.
    public var maximumAge: Duration

    /// Retention with the given limits (defaults: 1 GiB, 7 days).
    public init(maximumBytes: Int = 1 << 30, maximumAge: Duration = .seconds(7 * 86_400)) {
        self.maximumBytes = maximumBytes
        self.maximumAge = maximumAge
    }
}

/// What retention removed in one pass.
public struct RetentionReport: Sendable, Equatable {
    public var removedRecords: Int
    public var removedBytes: Int
}
