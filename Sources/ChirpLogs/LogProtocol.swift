import Chirp
import Foundation
import NIOCore

/// The log channel's messages between a source (the app) and a viewer, on top of Chirp's typed messages.
/// `Docs/Logging.md` describes the exchange step by step.
///
/// 1. The viewer sends a ``LogSubscribe`` request; the source answers ``LogSubscribed``.
/// 2. The source sends batches (binary messages of type ``LogProtocol/batchTypeName``, laid out as `LogBatch.swift`
///    describes), and ``LogsLost`` where records are missing, in sequence order, while the viewer's unacknowledged
///    bytes stay within the window.
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
