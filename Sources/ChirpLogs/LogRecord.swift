import Foundation
import Logging

/// One log record as a viewer or an in-process subscriber sees it: what was logged, where, and by which process.
///
/// ```swift
/// for await event in source.subscribe() {
///     if case .record(let record) = event { print(record.sequence, record.level, record.message) }
/// }
/// ```
public struct LogRecord: Sendable, Equatable {
    /// Position in its source's stream: 1, 2, 3, ... with no gap unless records were lost (and reported as such).
    /// With a spool, numbering continues across restarts of the app.
    public var sequence: UInt64
    /// When the log call was made.
    public var timestamp: Date
    /// The level it was logged at.
    public var level: Logger.Level
    /// The label of the `Logger` that logged it.
    public var label: String
    /// The message.
    public var message: String
    /// The metadata: the handler's, then the metadata provider's, then the call's own (later ones win).
    public var metadata: Logger.Metadata
    /// The source (usually the module) that logged it.
    public var source: String
    /// The file of the log call (`#fileID`).
    public var file: String
    /// The function of the log call.
    public var function: String
    /// The line of the log call.
    public var line: UInt
    /// The app name the source advertises.
    public var appName: String
    /// The host the source runs on.
    public var host: String
    /// The source's process id.
    public var processID: Int32
    /// The HTTP exchange, when this record reports one (see ``HTTPExchange``).
    public var http: HTTPExchange?

    /// Creates a record.
    public init(
        sequence: UInt64, timestamp: Date, level: Logger.Level, label: String, message: String,
        metadata: Logger.Metadata = [:], source: String = "", file: String = "", function: String = "", line: UInt = 0,
        appName: String = "", host: String = "", processID: Int32 = 0, http: HTTPExchange? = nil
    ) {
        self.sequence = sequence
        self.timestamp = timestamp
        self.level = level
        self.label = label
        self.message = message
        self.metadata = metadata
        self.source = source
        self.file = file
        self.function = function
        self.line = line
        self.appName = appName
        self.host = host
        self.processID = processID
        self.http = http
    }
}

/// Records a viewer or subscriber did not get, and why; they are counted, never silently skipped.
public struct LogLoss: Sendable, Equatable {
    /// The first sequence number lost.
    public var from: UInt64
    /// The last sequence number lost.
    public var through: UInt64
    /// Why: `"buffer full"` (the in-memory buffer was overwritten before they were sent), `"spool full"` (evicted from
    /// a full spool), or `"subscriber too slow"` for in-process subscribers.
    public var reason: String

    /// How many records: `through - from + 1`, or `UInt64.max` for the whole range of sequence numbers.
    public var count: UInt64 {
        guard through >= from else { return 0 }
        let (count, overflowed) = (through - from).addingReportingOverflow(1)
        return overflowed ? .max : count
    }

    /// Creates a loss report.
    public init(from: UInt64, through: UInt64, reason: String) {
        self.from = from
        self.through = through
        self.reason = reason
    }
}

/// What an in-process subscription (`LogSource.subscribe(bufferingNewest:)`) yields.
public enum LogStreamEvent: Sendable, Equatable {
    /// A record, in sequence order.
    case record(LogRecord)
    /// Records this subscriber did not get.
    case lost(LogLoss)
}

extension Logger.Level {
    /// The level's wire code: trace 0 ... critical 6.
    var code: UInt8 {
        switch self {
        case .trace: return 0
        case .debug: return 1
        case .info: return 2
        case .notice: return 3
        case .warning: return 4
        case .error: return 5
        case .critical: return 6
        }
    }

    /// The level for a wire code, `nil` for an unknown one.
    init?(code: UInt8) {
        switch code {
        case 0: self = .trace
        case 1: self = .debug
        case 2: self = .info
        case 3: self = .notice
        case 4: self = .warning
        case 5: self = .error
        case 6: self = .critical
        default: return nil
        }
    }
}
