import Chirp
import Foundation
import NIOCore

/// The log channel's messages between a source (the app) and a viewer, on top of Chirp's typed messages.
/// `Docs/Logging.md` describes the exchange step by step.
///
/// 1. The viewer sends a ``LogSubscribe`` request; the source answers ``LogSubscribed``.
/// 2. The source sends batches (binary messages of type ``LogProtocol/batchTypeName``), and ``LogsLost`` where records
///    are missing, in sequence order, while the viewer's unacknowledged bytes stay within the window.
/// 3. The viewer sends ``LogAck`` once it has handled a batch; that opens the window again (and, with a spool,
///    releases the records from it).
/// 4. Without `follow`, the source ends the subscription with ``LogsEnd`` after the last history record.
/// 5. While a subscription is quiet, the source sends ``LogStatus`` about once a second; a viewer that hears nothing
///    about a subscription for ``LogProtocol/silenceLimit`` subscribes again from where it is.
enum LogProtocol {
    /// The version of this exchange; a source refuses subscriptions of another version.
    static let version = 1
    /// The type name of batch messages (binary payload).
    static let batchTypeName = "chirp.logs.batch"
    /// How often a quiet subscription gets a ``LogStatus``.
    static let statusInterval: Duration = .seconds(1)
    /// How long a viewer waits without hearing about a subscription before it subscribes again.
    static let silenceLimit: Duration = .seconds(4)
    /// Batch header: version byte, subscription id, record count.
    static let batchHeaderSize = 1 + 8 + 4

    /// TXT / handshake metadata keys a source publishes.
    enum Key {
        static let role = "role"
        static let app = "app"
        static let host = "host"
        static let pid = "pid"
        static let stream = "stream"
    }

    /// Values of ``Key/role``.
    enum Role {
        static let source = "log-source"
        static let viewer = "log-viewer"
    }

    /// Appends a batch's header: version 1, the subscription, the number of entries that follow.
    static func writeBatchHeader(subscription: UInt64, count: Int, into bytes: inout [UInt8]) {
        bytes.append(1)
        RecordCoding.writeInteger(subscription, into: &bytes)
        RecordCoding.writeInteger(UInt32(truncatingIfNeeded: count), into: &bytes)
    }

    /// Sets the entry count of a batch whose header starts `bytes`.
    static func setBatchCount(_ count: Int, in bytes: inout [UInt8]) {
        RecordCoding.setInteger(UInt32(truncatingIfNeeded: count), at: 1 + 8, in: &bytes)
    }

    /// Parses a batch payload: its subscription and its records (read in place, in one pass).
    static func parseBatch(_ data: Data, origin: RecordCoding.Origin) throws -> (
        subscription: UInt64, records: [LogRecord]
    ) {
        try data.withUnsafeBytes { bytes in
            var reader = RecordCoding.EntryReader(bytes)
            guard reader.remaining >= 1, try reader.integer(UInt8.self) == 1 else {
                throw RecordCoding.DecodingError(description: "unknown batch version")
            }
            guard reader.remaining >= 12 else {
                throw RecordCoding.DecodingError(description: "truncated batch header")
            }
            let subscription = try reader.integer(UInt64.self)
            let count = Int(try reader.integer(UInt32.self))
            guard count * 12 <= reader.remaining else {
                throw RecordCoding.DecodingError(
                    description: "batch claims \(count) records in \(reader.remaining) bytes")
            }
            var records: [LogRecord] = []
            records.reserveCapacity(min(count, 1024))  // the count is the peer's: grow as the records decode
            for _ in 0..<count { records.append(try reader.entry(origin: origin)) }
            if reader.remaining != 0 {
                throw RecordCoding.DecodingError(description: "stray bytes after the last record")
            }
            return (subscription, records)
        }
    }
}

/// Viewer -> source request: start streaming records to me.
struct LogSubscribe: Codable, Sendable, ChirpMessage {
    static let chirpTypeName = "chirp.logs.subscribe"
    /// Protocol version of the viewer.
    var version: Int = LogProtocol.version
    /// Chosen by the viewer; every batch and notice of this subscription carries it.
    var subscription: UInt64
    /// Continue after records already received: start at this sequence number (if ``stream`` still matches).
    var fromSequence: UInt64?
    /// The stream the viewer's `fromSequence` belongs to.
    var stream: String?
    /// Otherwise: how many records of history to send first (`nil`: the source's configured history).
    var history: Int?
    /// Keep streaming live records after the history (`false`: end with ``LogsEnd``).
    var follow: Bool
}

/// Source -> viewer reply to ``LogSubscribe``.
struct LogSubscribed: Codable, Sendable, ChirpMessage {
    static let chirpTypeName = "chirp.logs.subscribed"
    var subscription: UInt64
    var stream: String
    var app: String
    var host: String
    var pid: Int32
    /// The first sequence number this subscription will deliver (or report lost).
    var firstSequence: UInt64
    /// The last record that existed when the subscription started (the end of the history).
    var lastSequence: UInt64
}

/// Viewer -> source: every record through `through` was handled.
struct LogAck: Codable, Sendable, ChirpMessage {
    static let chirpTypeName = "chirp.logs.ack"
    var subscription: UInt64
    var through: UInt64
}

/// Source -> viewer: records `from...through` will never come (the buffer or spool lost them).
struct LogsLost: Codable, Sendable, ChirpMessage {
    static let chirpTypeName = "chirp.logs.lost"
    var subscription: UInt64
    var from: UInt64
    var through: UInt64
    var reason: String
}

/// Source -> viewer, about once a second while a subscription has nothing else to send: it is alive. A viewer that
/// hears nothing about a subscription for a few seconds subscribes again (a connection may have been replaced).
struct LogStatus: Codable, Sendable, ChirpMessage {
    static let chirpTypeName = "chirp.logs.status"
    var subscription: UInt64
    /// The last sequence number the source holds.
    var latest: UInt64
}

/// Source -> viewer: a subscription without `follow` has sent all its history.
struct LogsEnd: Codable, Sendable, ChirpMessage {
    static let chirpTypeName = "chirp.logs.end"
    var subscription: UInt64
    var through: UInt64
}
