import Chirp
import Foundation
import Logging
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The app side of the log channel: a bounded buffer that swift-log handlers write into, and a Chirp transceiver that
/// advertises `_chirp-logs._tcp` and streams the records to every viewer (`chirp logs`) that subscribes.
///
/// ```swift
/// let logs = try LogSource(configuration: LogSourceConfiguration(appName: "orders"))
/// LoggingSystem.bootstrap { label in
///     MultiplexLogHandler([StreamLogHandler.standardOutput(label: label), logs.handler(label: label)])
/// }
/// try await logs.start()
/// let session = URLSession(configuration: logs.capturingHTTP(.default))   // HTTP calls show up too (ChirpLogsURLSession)
/// ```
///
/// Records are kept from the moment the source is created, so a viewer that connects later receives the recent
/// history (``LogSourceConfiguration/history``) and then live records, with no gap and no duplicate at the seam.
public final class LogSource: Sendable {
    /// The configuration the source was created with.
    public let configuration: LogSourceConfiguration
    /// Identifies this stream of sequence numbers: new for each process, or kept by the spool across restarts.
    public let streamID: String
    /// The host name viewers see.
    public let host: String
    /// This process's id.
    public let processID: Int32

    let buffer: LogBuffer
    let pump: LogPump
    /// The transceiver that advertises this source and talks to viewers.
    public let transceiver: Transceiver
    private let policy: NIOLockedValueBox<HTTPLogPolicy>

    /// Creates the source and its buffer (records are kept from now on); nothing happens on the network until
    /// ``start()``.
    ///
    /// - Throws: when the spool directory cannot be used (another process holds it, no permission).
    public init(configuration: LogSourceConfiguration = LogSourceConfiguration()) throws {
        self.configuration = configuration
        let host = Configuration.defaultPeerName
        let pid = getpid()
        self.host = host
        self.processID = pid
        let spool = try configuration.spool.map {
            try LogSpool(directory: $0.directory, maximumBytes: $0.maximumBytes)
        }
        let streamID = spool?.streamID ?? UUID().uuidString.lowercased()
        self.streamID = streamID
        let buffer = LogBuffer(
            capacity: min(max(configuration.bufferCapacity, 1), LogSourceConfiguration.maximumBufferCapacity),
            firstSequence: (spool?.lastSequence ?? 0) + 1)
        self.buffer = buffer
        let origin = RecordCoding.Origin(appName: configuration.appName, host: host, processID: pid)
        self.policy = NIOLockedValueBox(configuration.http)

        var transceiverConfiguration = configuration.transceiver
        transceiverConfiguration.serviceType = configuration.serviceType
        transceiverConfiguration.peerName = String(
            configuration.appName.prefix(63).isEmpty ? "app" : configuration.appName.prefix(63))
        transceiverConfiguration.metadata[LogProtocol.Key.role] = LogProtocol.Role.source
        // A viewer that does not advertise itself (a tool) subscribes too: its sessions end when it goes.
        transceiverConfiguration.includesTools = true
        transceiverConfiguration.metadata[LogProtocol.Key.app] = String(configuration.appName.prefix(100))
        transceiverConfiguration.metadata[LogProtocol.Key.host] = host
        transceiverConfiguration.metadata[LogProtocol.Key.pid] = String(pid)
        transceiverConfiguration.metadata[LogProtocol.Key.stream] = streamID
        transceiverConfiguration.logger =
            configuration.networkLogger
            ?? Logger(label: "chirp.logs") { label in
                ChirpLogHandler(label: label, buffer: buffer, logLevel: .notice, metadataProvider: nil)
            }
        // The pump's logger is fixed before its queue runs; the transceiver reaches it through that queue: with a
        // spool, the pump starts a pass as soon as it exists.
        self.pump = LogPump(
            buffer: buffer, spool: spool, origin: origin, streamID: streamID, configuration: configuration,
            logger: transceiverConfiguration.logger)
        let transceiver = Transceiver(configuration: transceiverConfiguration)
        self.transceiver = transceiver
        pump.attach(transceiver)

        let pump = self.pump
        try transceiver.respond(to: LogSubscribe.self) {
            [unowned transceiver] request, peer async throws -> LogSubscribed in
            guard request.version == LogProtocol.version else {
                throw LogSourceError.unsupportedVersion(request.version)
            }
            // With device identities, a viewer needs the `logs` permission (open or with a secret, every peer has it).
            let held = transceiver.permissions(of: peer)
            guard held.contains(.logs) else { throw LogSourceError.notPermitted(holds: held) }
            return await pump.subscribe(request, from: peer)
        }
        try transceiver.receive(LogAck.self) { ack, peer in
            pump.acknowledge(subscription: ack.subscription, through: ack.through, from: peer)
        }
        // A viewer that leaves takes its sessions with it. The task ends when the transceiver is gone (its event
        // streams end then); it holds the pump weakly, so the pump (and its spool) goes with the source at once.
        let events = transceiver.makeEvents()
        Task { [weak pump] in
            for await event in events {
                if case .peerDisconnected(let peer) = event { pump?.removeSessions(of: peer) }
            }
        }
    }

    /// A handler for `label`, to return from the factory given to `LoggingSystem.bootstrap` (alone or inside a
    /// `MultiplexLogHandler`). Its level starts at ``LogSourceConfiguration/logLevel``.
    public func handler(label: String) -> ChirpLogHandler {
        ChirpLogHandler(
            label: label, buffer: buffer, logLevel: configuration.logLevel,
            metadataProvider: LoggingSystem.metadataProvider)
    }

    /// A handler for `label` with a metadata provider.
    public func handler(label: String, metadataProvider: Logger.MetadataProvider?) -> ChirpLogHandler {
        ChirpLogHandler(
            label: label, buffer: buffer, logLevel: configuration.logLevel, metadataProvider: metadataProvider)
    }

    /// Starts advertising and serving viewers; returns once listening.
    /// - Throws: a configuration error or `ChirpError.listenFailed(_:)`.
    public func start() async throws {
        try await transceiver.start()
    }

    /// Stops serving viewers and releases the network resources. The buffer (and spool) keep what they hold; records
    /// logged meanwhile are kept too, and ``start()`` may be called again.
    public func stop() async {
        pump.removeAllSessions()
        await transceiver.shutdown()
    }

    /// The TCP port viewers connect to (`chirp logs --connect HOST:PORT`), once started.
    public var port: Int? { transceiver.port }

    /// Counters: records logged, lost to viewers, evicted from the spool, ...
    public var statistics: LogSourceStatistics { pump.counters.withLockedValue { $0 } }

    // MARK: In-process subscribers

    /// Records as they are logged, for code inside the app (a debug screen, a test), starting with up to `history`
    /// recent records. A subscriber that does not keep up loses the oldest records beyond `bufferingNewest`; they
    /// are counted in ``LogSourceStatistics/droppedForSubscribers``, and records overwritten in the buffer before it
    /// read them arrive as ``LogStreamEvent/lost(_:)``. Ends when the iterating task is cancelled.
    ///
    /// ```swift
    /// for await case .record(let record) in logs.subscribe() where record.level >= .error {
    ///     errorBadge.increment()
    /// }
    /// ```
    public func subscribe(bufferingNewest: Int = 10_000, history: Int = 0) -> AsyncStream<LogStreamEvent> {
        pump.subscribe(bufferingNewest: bufferingNewest, history: history)
    }

    // MARK: HTTP

    /// What HTTP exchanges are recorded and how they are sanitized; takes effect for the next exchange.
    public var httpPolicy: HTTPLogPolicy {
        get { policy.withLockedValue { $0 } }
        set { policy.withLockedValue { $0 = newValue } }
    }

    /// Switches HTTP capture on or off while the app runs (``HTTPLogPolicy/isEnabled``).
    public var isHTTPCaptureEnabled: Bool {
        get { policy.withLockedValue { $0.isEnabled } }
        set { policy.withLockedValue { $0.isEnabled = newValue } }
    }

    /// Records an HTTP exchange made with any client, if the policy admits it, after redaction and body capping.
    ///
    /// - Returns: whether it was recorded.
    @discardableResult
    public func report(
        _ exchange: HTTPExchange, file: String = #fileID, function: String = #function, line: UInt = #line
    ) -> Bool {
        let policy = self.policy.withLockedValue { $0 }
        guard policy.admits(exchange) else { return false }
        let sanitized = policy.sanitized(exchange)
        var metadata: Logger.Metadata = ["method": .string(sanitized.method), "url": .string(sanitized.url)]
        if let status = sanitized.status { metadata["status"] = .stringConvertible(status) }
        metadata["duration_ms"] = .string(String(format: "%.1f", sanitized.duration * 1000))
        let event = LogEvent(
            level: HTTPLogPolicy.level(of: sanitized), message: "\(sanitized.summary)", metadata: metadata,
            source: "ChirpLogs", file: file, function: function, line: line)
        buffer.append(
            PendingRecord(
                sequence: 0, timeNanos: ChirpLogHandler.now(), label: policy.label, event: event, handlerMetadata: [:],
                providerMetadata: nil, http: HTTPExchangeBox(sanitized)))
        return true
    }
}

/// Errors a log source reports to viewers.
enum LogSourceError: Error, CustomStringConvertible {
    case unsupportedVersion(Int)
    /// The viewer's device lacks the `logs` permission; it holds these.
    case notPermitted(holds: Set<Permission>)

    var description: String {
        switch self {
        case .unsupportedVersion(let version):
            return
                "this log source speaks log protocol \(LogProtocol.version), the viewer speaks \(version): update one of them"
        case .notPermitted(let held):
            return
                "following the logs needs the 'logs' permission, and this device holds \(held.isEmpty ? "none" : Permission.list(held)): the app's owner can grant it in the app's trust file (perms=)"
        }
    }
}
