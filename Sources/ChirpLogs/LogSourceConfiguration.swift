import Chirp
import Foundation
import Logging

/// Everything a ``LogSource`` needs to know, with documented defaults.
///
/// ```swift
/// var configuration = LogSourceConfiguration(appName: "orders")
/// configuration.spool = LogSpoolConfiguration(directory: "/var/tmp/orders-logs")
/// configuration.http.redactedHeaders.insert("x-api-key")
/// let logs = try LogSource(configuration: configuration)
/// ```
public struct LogSourceConfiguration: Sendable {
    /// The well-known service type every log source advertises: `chirp-logs`, i.e. `_chirp-logs._tcp`.
    public static let defaultServiceType = "chirp-logs"

    /// The app name viewers see and select with `chirp logs APP`. Default: the process name.
    public var appName: String
    /// The DNS-SD service type. Default: ``defaultServiceType``; change it only to keep sources apart (tests).
    public var serviceType: String = LogSourceConfiguration.defaultServiceType
    /// Records kept in memory: the buffer live records wait in until they are sent, and the history a late viewer can
    /// get. When it is full, the oldest record is overwritten; viewers that had not received it are told it was
    /// lost. Default: 16384. The source keeps at least 1 and at most ``maximumBufferCapacity``, whatever is set here
    /// (the buffer's slots are allocated at once).
    public var bufferCapacity: Int = 16_384
    /// The largest ``bufferCapacity`` a source uses: 2^24 records (16,777,216).
    public static let maximumBufferCapacity = 1 << 24
    /// How many records of history a viewer that connects late receives before live records (at most
    /// ``bufferCapacity``, unless a spool holds more). Default: 1000.
    public var history: Int = 1000
    /// The level of handlers made by ``LogSource/handler(label:)``. Default: `.info`.
    public var logLevel: Logger.Level = .info
    /// The opt-in spool: records kept on disk until a viewer acknowledges them. Default: `nil` (no spool).
    public var spool: LogSpoolConfiguration?
    /// What HTTP exchanges are recorded and how they are sanitized; can be changed later with
    /// ``LogSource/httpPolicy``.
    public var http = HTTPLogPolicy()
    /// The transceiver's settings (interface, port, shared secret, ...). Its service type, peer name, metadata and
    /// logger are set from this configuration. Default: Chirp's defaults with an outbound limit of 16 MiB per viewer.
    public var transceiver: Configuration
    /// How viewers' connections are protected: the transceiver's `Configuration.security`. With a shared
    /// secret, only viewers that hold the same one can connect, and everything they receive is encrypted; the
    /// advertisement says a secret is required, and refused viewers are logged (never the secret). Default: `.none`
    /// (any viewer that can reach the port can read the logs).
    ///
    /// ```swift
    /// configuration.security = .sharedSecret(try SharedSecret.fromEnvironment() ?? SharedSecret(contentsOfFile: path))
    /// ```
    public var security: Configuration.Security {
        get { transceiver.security }
        set { transceiver.security = newValue }
    }
    /// Where the source's own network messages (viewers connecting, errors) are logged. Default: `nil`, which logs
    /// them into this source itself (label `chirp.logs`, notice and above), so they show up in the viewers.
    public var networkLogger: Logger?
    /// Most records in one batch. Default: 1024.
    public var batchRecords: Int = 1024
    /// Most bytes in one batch (a single larger record still goes alone). Default: 256 KiB.
    public var batchBytes: Int = 256 * 1024
    /// Bytes sent to one viewer and not acknowledged yet; the source waits for acknowledgements beyond it, so a slow
    /// or frozen viewer costs at most this much memory. Default: 2 MiB.
    public var windowBytes: Int = 2 * 1024 * 1024
    /// How long the sender waits for more records before sending again while records keep coming; bounds the delay
    /// a batch adds. Default: 1 ms.
    public var flushInterval: Duration = .milliseconds(1)

    /// A configuration with every setting at its default.
    public init(appName: String = ProcessInfo.processInfo.processName) {
        self.appName = appName
        var transceiver = Configuration(serviceType: LogSourceConfiguration.defaultServiceType)
        transceiver.outboundLimit = 16 * 1024 * 1024
        self.transceiver = transceiver
    }
}

/// Where and how big the spool is.
public struct LogSpoolConfiguration: Sendable {
    /// The directory holding the spool's files; created if missing. One process at a time may use it.
    public var directory: String
    /// The most bytes the spool keeps; beyond it the oldest records are evicted, acknowledged or not, and counted.
    /// Default: 64 MiB.
    public var maximumBytes: Int

    /// A spool in `directory` of at most `maximumBytes`.
    public init(directory: String, maximumBytes: Int = 64 * 1024 * 1024) {
        self.directory = directory
        self.maximumBytes = maximumBytes
    }
}

/// Counters of a ``LogSource``, to check that nothing is lost silently.
public struct LogSourceStatistics: Sendable, Equatable {
    /// Records logged (sequence numbers assigned) by this process.
    public var logged: UInt64 = 0
    /// Records reported lost to viewers (overwritten or evicted before they could be sent).
    public var lostToViewers: UInt64 = 0
    /// Records overwritten in memory before they could be written to the spool.
    public var notSpooled: UInt64 = 0
    /// Unacknowledged records evicted from a full spool.
    public var evictedFromSpool: UInt64 = 0
    /// Records in-process subscribers did not get because they were too slow.
    public var droppedForSubscribers: UInt64 = 0
    /// Records waiting in the spool for an acknowledgement.
    public var unacknowledgedInSpool: UInt64 = 0
    /// Viewers currently subscribed.
    public var viewers: Int = 0
}
