import Chirp
import Foundation

/// What the store holds of one source (one stream: a run of one app).
public struct ConsoleSource: Sendable, Equatable {
    /// The stream id.
    public var stream: String
    /// The app name it advertised.
    public var app: String
    /// The host it runs on.
    public var host: String
    /// Its process id.
    public var pid: Int32
    /// When it was first stored.
    public var firstSeen: Date
    /// When it was last heard from.
    public var lastSeen: Date
    /// The last sequence number stored.
    public var lastSequence: UInt64
    /// Records stored (before retention removed any).
    public var records: Int
    /// Records the source reported lost (its buffer or spool overflowed).
    public var lost: Int
    /// Its device fingerprint, when it uses a device identity: the one it last advertised (the one its certificate
    /// proved when the console follows it with a device identity); `nil` for open sources and those with a shared
    /// secret.
    public var fingerprint: Fingerprint? = nil
}
