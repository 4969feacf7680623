import Foundation

/// What the store holds of one source (one stream: a run of one app).
public struct ConsoleSource: Sendable, Equatable {
    public var stream: String
    public var app: String
    public var host: String
    public var pid: Int32
    public var firstSeen: Date
    public var lastSeen: Date
    /// The last sequence number stored.
    public var lastSequence: UInt64
    /// Records stored (before retention removed any).
    public var records: Int
    /// Records the source reported lost (its buffer or spool overflowed).
    public var lost: Int
}
