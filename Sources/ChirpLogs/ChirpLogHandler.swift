import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A swift-log `LogHandler` that feeds a ``LogSource``: every record goes into the source's bounded in-memory buffer,
/// and from there to connected viewers (`chirp logs`), the spool and in-process subscribers.
///
/// It follows swift-log's conventions: a value type (changing the level or metadata of one `Logger` never affects
/// another), metadata, a metadata provider, and a log level. A log call never waits on the network or the disk: it
/// stores the event and returns.
///
/// ```swift
/// let logs = try LogSource(configuration: LogSourceConfiguration(appName: "orders"))
/// LoggingSystem.bootstrap { label in
///     MultiplexLogHandler([StreamLogHandler.standardError(label: label), logs.handler(label: label)])
/// }
/// try await logs.start()
/// ```
public struct ChirpLogHandler: LogHandler {
    /// The logger label this handler was made for.
    public let label: String
    /// Metadata attached to every record of this handler.
    public var metadata: Logger.Metadata = [:]
    /// Provides contextual metadata (task locals, ...) at each log call.
    public var metadataProvider: Logger.MetadataProvider?
    /// The minimum level logged. Default: the source's ``LogSourceConfiguration/logLevel``.
    public var logLevel: Logger.Level

    let buffer: LogBuffer

    init(label: String, buffer: LogBuffer, logLevel: Logger.Level, metadataProvider: Logger.MetadataProvider?) {
        self.label = label
        self.buffer = buffer
        self.logLevel = logLevel
        self.metadataProvider = metadataProvider
    }

    /// Stores the event in the source's buffer.
    public func log(event: LogEvent) {
        let record = PendingRecord(
            sequence: 0, timeNanos: Self.now(), label: label, event: event, handlerMetadata: metadata,
            providerMetadata: metadataProvider?.get(), http: nil)
        buffer.append(record)
    }

    /// Gets or sets one metadata value of this handler.
    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Nanoseconds since 1970 (wall clock).
    @inline(__always)
    static func now() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
    }
}
