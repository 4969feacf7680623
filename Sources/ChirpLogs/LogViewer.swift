import Chirp
import Foundation
import Logging
import NIOConcurrencyHelpers

/// Settings of a ``LogViewer``.
public struct LogViewerConfiguration: Sendable {
    /// The service type sources advertise. Default: ``LogSourceConfiguration/defaultServiceType``.
    public var serviceType: String = LogSourceConfiguration.defaultServiceType
    /// Which sources to follow. Default: all.
    public var selector = LogSourceSelector()
    /// Keep following live records after the history. Default: `true`.
    public var follow = true
    /// Records of history to ask each source for; `nil` for the source's own setting. Default: `nil`.
    public var history: Int?
    /// Connect to this `host:port` instead of following the sources found by discovery. Default: `nil`.
    public var endpoint: (host: String, port: Int)?
    /// Without ``follow``: how long to look for sources before finishing with those found. Default: 3 s.
    public var discoveryTime: Duration = .seconds(3)
    /// Streams whose records up to a sequence number were already handled (stream id to its last sequence number):
    /// each is continued after it, as a durable sink (Chirp Console's store) does after a restart, so that nothing is
    /// delivered twice. Default: empty.
    public var resumeAfter: [String: UInt64] = [:]
    /// With ``endpoint``: how long to wait between connection attempts. Default: 1 s.
    public var reconnectInterval: Duration = .seconds(1)
    /// The transceiver's settings (interface, logger, shared secret, ...); its service type and metadata are set by
    /// the viewer.
    public var transceiver = Configuration(serviceType: LogSourceConfiguration.defaultServiceType)

    /// How connections to sources are protected: the transceiver's `Configuration.security`. Sources that
    /// require a shared secret are followed only with the same one; the others are reported as
    /// ``LogViewerEvent/refused(_:)``. Default: `.none` (open).
    ///
    /// ```swift
    /// configuration.security = .sharedSecret(try SharedSecret(contentsOfFile: "/etc/orders/log-secret"))
    /// ```
    public var security: Configuration.Security {
        get { transceiver.security }
        set { transceiver.security = newValue }
    }

    /// A configuration with every setting at its default.
    public init() {}
}

/// What a ``LogViewer`` reports, in order.
public enum LogViewerEvent: Sendable {
    /// Now following `source`; `resumed` when continuing after records received before (no record is repeated).
    case following(LogSourceInfo, resumed: Bool)
    /// Records of `source`, in sequence order, each exactly once.
    case records([LogRecord], LogSourceInfo)
    /// Records of `source` that will never come, and why.
    case lost(LogLoss, LogSourceInfo)
    /// `source` sent all its history (without ``LogViewerConfiguration/follow``).
    case historyComplete(LogSourceInfo)
    /// The connection to `source` was lost; it is followed again when it comes back.
    case sourceLost(LogSourceInfo)
    /// What the viewer is waiting for (discovery, reconnection), for a status line.
    case waiting(String)
    /// Something went wrong with one source (a refused subscription, an undecodable batch); others go on.
    case problem(String)
    /// No DNS-SD daemon answers: sources can be neither found nor followed by discovery (``LogViewerConfiguration``'s
    /// endpoint still works). The viewer keeps retrying; the message says what to start.
    case discoveryUnavailable(String)
    /// A selected source refused the connection (a shared secret missing or different, its accept policy): nothing
    /// of it is received. Reported once per source and reason; the viewer goes on with the other sources.
    case refused(LogSourceRefusal)
}

/// An error that ends ``LogViewer/run(_:)`` (without follow): what went wrong (``code``), a sentence for people
/// (``message``), what it is about (the ``selector`` that matched nothing, the ``refusals``), and the underlying
/// ``cause`` when another error led to it.
///
/// It is a struct with an extensible ``Code``, in the style of grpc-swift's `RPCError` (and of Chirp's `ChirpError`),
/// so that a new kind of error does not break a `switch` in your code: match on `code` and keep a `default`.
///
/// ```swift
/// do {
///     try await LogViewer(configuration: configuration).run { _ in }
/// } catch let error as LogViewerError where error.code == .refused {
///     for refusal in error.refusals { print(refusal) }
/// }
/// ```
public struct LogViewerError: Error, Sendable, Equatable, CustomStringConvertible, LocalizedError {
    /// What went wrong. New codes may come in later versions: a `switch` over them needs a `default`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Wrapped: String, Hashable, Sendable {
            case noSourceFound, refused
        }
        private let wrapped: Wrapped
        private init(_ wrapped: Wrapped) { self.wrapped = wrapped }

        /// The code's name, as in `noSourceFound`.
        public var description: String { wrapped.rawValue }

        /// Without follow: no matching source was found within the discovery time.
        public static let noSourceFound = Code(.noSourceFound)
        /// Without follow: the matching sources found all refused the viewer; ``LogViewerError/refusals`` says why.
        public static let refused = Code(.refused)
    }

    /// What went wrong.
    public let code: Code
    /// What went wrong, as one sentence for people (the same as ``description``).
    public let message: String
    /// What was looked for, for ``Code/noSourceFound``: the selector's description.
    public let selector: String?
    /// The sources that refused the viewer and why, for ``Code/refused`` (see ``LogSourceRefusal``); empty otherwise.
    public let refusals: [LogSourceRefusal]
    /// The underlying error, when another error led to this one.
    public let cause: (any Error)?

    /// Makes an error; the viewer's own are made by the static functions below, one per ``Code``.
    public init(
        code: Code, message: String, selector: String? = nil, refusals: [LogSourceRefusal] = [],
        cause: (any Error)? = nil
    ) {
        self.code = code
        self.message = message
        self.selector = selector
        self.refusals = refusals
        self.cause = cause
    }

    /// The same sentence as ``message``.
    public var description: String { message }

    /// The same sentence as ``message``, so that `localizedDescription` reads as the message rather than "The
    /// operation could not be completed".
    public var errorDescription: String? { message }

    /// Equal when the code, the sentence, the selector and the refusals are; the cause is not compared.
    public static func == (lhs: LogViewerError, rhs: LogViewerError) -> Bool {
        lhs.code == rhs.code && lhs.message == rhs.message && lhs.selector == rhs.selector
            && lhs.refusals == rhs.refusals
    }
}

// MARK: - The viewer's errors, one function per code

extension LogViewerError {
    /// Without follow: no source matching `selector` (its description) was found within the discovery time.
    public static func noSourceFound(_ selector: String) -> LogViewerError {
        LogViewerError(code: .noSourceFound, message: "no log source found (\(selector))", selector: selector)
    }

    /// Without follow: the matching sources found all refused the viewer, for the reasons in `refusals`.
    public static func refused(_ refusals: [LogSourceRefusal]) -> LogViewerError {
        LogViewerError(
            code: .refused, message: "refused: " + refusals.map(\.description).joined(separator: "; "),
            refusals: refusals)
    }
}

/// The viewer side of the log channel: finds log sources (or connects to one), subscribes, and delivers their records
/// in order, each exactly once, acknowledging each batch once the handler has dealt with it, so that a slow handler
/// slows the sources' sending (they buffer and count losses) instead of growing this process's memory.
///
/// ```swift
/// var configuration = LogViewerConfiguration()
/// configuration.selector = LogSourceSelector(appName: "orders")
/// try await LogViewer(configuration: configuration).run { event in
///     if case .records(let records, _) = event { for record in records { print(record.message) } }
/// }
/// ```
public final class LogViewer: Sendable {
    /// The configuration the viewer was created with.
    public let configuration: LogViewerConfiguration

    /// Creates a viewer; nothing happens until ``run(_:)``.
    public init(configuration: LogViewerConfiguration = LogViewerConfiguration()) {
        self.configuration = configuration
    }

    /// Follows sources and calls `handler` with each event, one at a time, until the task is cancelled (with follow)
    /// or every source found sent its history (without follow).
    ///
    /// - Throws: ``LogViewerError/noSourceFound(_:)`` without follow when nothing matched; a configuration error;
    ///   what `handler` throws.
    public func run(_ handler: @escaping @Sendable (LogViewerEvent) async throws -> Void) async throws {
        var transceiverConfiguration = configuration.transceiver
        transceiverConfiguration.serviceType = configuration.serviceType
        transceiverConfiguration.metadata[LogProtocol.Key.role] = LogProtocol.Role.viewer
        let transceiver = Transceiver(configuration: transceiverConfiguration)
        let state = ViewerState(resumeAfter: configuration.resumeAfter)
        let (inbox, input) = AsyncStream.makeStream(of: Inbound.self)
        let logger = transceiverConfiguration.logger

        try transceiver.receive(RawMessage.self) { message, peer in
            guard message.typeName == LogProtocol.batchTypeName, message.isBinary else { return }
            guard message.payload.count >= LogProtocol.batchHeaderSize else { return }
            let subscription = message.payload.withUnsafeBytes { raw -> UInt64 in
                var value: UInt64 = 0
                for index in 1..<9 { value = value << 8 | UInt64(raw[index]) }
                return value
            }
            guard let info = state.heard(subscription, peerID: peer.id) else { return }
            let origin = RecordCoding.Origin(appName: info.appName, host: info.host, processID: info.processID)
            do {
                let batch = try LogProtocol.parseBatch(message.payload, origin: origin)
                if let damage = batch.damage {
                    logger.warning("damaged log batch from \(info): \(damage)")
                    input.yield(.problem("damaged log batch from \(info): \(damage)"))
                }
                if batch.entryCount > 0 { input.yield(.batch(batch)) }
            } catch {
                logger.warning("undecodable log batch from \(info): \(error)")
                input.yield(.problem("undecodable log batch from \(info): \(error)"))
            }
        }
        try transceiver.receive(LogsLost.self) { lost, peer in
            guard state.heard(lost.subscription, peerID: peer.id) != nil else { return }
            input.yield(.lost(lost))
        }
        try transceiver.receive(LogsEnd.self) { end, peer in
            guard state.heard(end.subscription, peerID: peer.id) != nil else { return }
            input.yield(.end(end.subscription))
        }
        try transceiver.receive(LogStatus.self) { status, peer in
            _ = state.heard(status.subscription, peerID: peer.id)
        }
        let events = transceiver.makeEvents()
        try await transceiver.start()

        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await self.watch(events, transceiver: transceiver, state: state, input: input) }
                group.addTask { await self.reconcile(transceiver: transceiver, state: state, input: input) }
                if let endpoint = configuration.endpoint {
                    group.addTask {
                        await self.connectLoop(endpoint, transceiver: transceiver, state: state, input: input)
                    }
                } else {
                    input.yield(
                        .waiting(
                            "looking for log sources (_\(configuration.serviceType)._tcp, \(configuration.selector))"))
                }
                if !configuration.follow {
                    let wait = configuration.discoveryTime
                    group.addTask {
                        try? await Task.sleep(for: wait)
                        input.yield(.settled)
                    }
                }
                try await self.consume(inbox, transceiver: transceiver, state: state, handler: handler)
                group.cancelAll()
            }
        } catch {
            await transceiver.shutdown()
            throw error
        }
        await transceiver.shutdown()
    }

    // MARK: Consuming

    private func consume(
        _ inbox: AsyncStream<Inbound>, transceiver: Transceiver, state: ViewerState,
        handler: @Sendable (LogViewerEvent) async throws -> Void
    ) async throws {
        var settled = false
        for await item in inbox {
            switch item {
            case .waiting(let text):
                try await handler(.waiting(text))
            case .problem(let text):
                try await handler(.problem(text))
            case .discoveryUnavailable(let text):
                try await handler(.discoveryUnavailable(text))
            case .following(let info, let resumed):
                try await handler(.following(info, resumed: resumed))
            case .batch(let batch):
                guard let (info, peer) = state.subscription(batch.subscription) else { continue }
                // The records, each entry that did not decode reported lost where it was among them: in order.
                var start = 0
                for (before, sequence) in batch.undecodable {
                    try await deliver(Array(batch.records[start..<before]), from: info, state: state, handler: handler)
                    start = before
                    for loss in sequence.map({ state.acceptUndecodable($0, stream: info.streamID) }) ?? [] {
                        try await handler(.lost(loss, info))
                    }
                }
                let rest = start == 0 ? batch.records : Array(batch.records[start...])
                try await deliver(rest, from: info, state: state, handler: handler)
                // Undecodable entries are acknowledged too: no viewer will ever read them.
                if let last = batch.lastSequence {
                    _ = try? await transceiver.send(LogAck(subscription: batch.subscription, through: last), to: peer)
                }
            case .lost(let lost):
                guard let (info, _) = state.subscription(lost.subscription) else { continue }
                if let loss = state.acceptLoss(
                    from: lost.from, through: lost.through, reason: lost.reason, stream: info.streamID)
                {
                    try await handler(.lost(loss, info))
                }
            case .end(let subscription):
                if let info = state.end(subscription) { try await handler(.historyComplete(info)) }
            case .sourceLost(let peerID):
                for info in state.drop(peerID: peerID) { try await handler(.sourceLost(info)) }
            case .refused(let refusal):
                try await handler(.refused(refusal))
            case .settled:
                settled = true
            }
            if !configuration.follow && settled && state.isIdle {
                if !state.foundAny {
                    let refusals = state.refusals
                    if !refusals.isEmpty { throw LogViewerError.refused(refusals) }
                    throw LogViewerError.noSourceFound(configuration.selector.description)
                }
                return
            }
        }
    }

    /// Hands the records of `run` not delivered before to `handler`, after the gap before them, if any.
    private func deliver(
        _ run: [LogRecord], from info: LogSourceInfo, state: ViewerState,
        handler: @Sendable (LogViewerEvent) async throws -> Void
    ) async throws {
        guard !run.isEmpty else { return }
        let (fresh, gap) = state.accept(run, stream: info.streamID)
        if let gap { try await handler(.lost(gap, info)) }
        if !fresh.isEmpty { try await handler(.records(fresh, info)) }
    }

    // MARK: Finding sources

    private func watch(
        _ events: AsyncStream<TransceiverEvent>, transceiver: Transceiver, state: ViewerState,
        input: AsyncStream<Inbound>.Continuation
    ) async {
        await withDiscardingTaskGroup { group in
            for await event in events {
                switch event {
                case .peerConnected(let peer):
                    guard configuration.endpoint == nil, let info = LogSourceInfo(peer: peer),
                        configuration.selector.matches(info)
                    else { continue }
                    group.addTask {
                        await self.subscribe(peer, info: info, transceiver: transceiver, state: state, input: input)
                    }
                case .peerDisconnected(let peer):
                    input.yield(.sourceLost(peer.id))
                case .discoveryUnavailable(let message) where configuration.endpoint == nil:
                    input.yield(.discoveryUnavailable(message))
                case .connectionRefused(let peer, let reason):
                    for refusal in refusals(peer: peer, reason: reason, transceiver: transceiver)
                    where state.noteRefusal(refusal) {
                        input.yield(.refused(refusal))
                    }
                default:
                    break
                }
            }
        }
    }

    /// The selected sources a refusal the core reported concerns. The core names a refused peer by its advertised
    /// name (a refusal decided from its TXT record), as "NAME (ID8)" (a dial that failed), or by its address (an
    /// inbound connection). Refusals of other viewers (they join the same service type) and of sources not selected
    /// are left out, and so are inbound ones by address: every source is also dialed, which names it.
    private func refusals(peer name: String, reason: String, transceiver: Transceiver) -> [LogSourceRefusal] {
        let named = transceiver.availablePeers.filter { $0.name == name || $0.description == name }
        if let endpoint = configuration.endpoint {
            // With an endpoint: the dial to its address, or the advertised peer that listens on its port.
            let suffix = ":\(endpoint.port)"
            if name.hasSuffix(suffix) {
                return [LogSourceRefusal(source: "\(endpoint.host):\(endpoint.port)", info: nil, reason: reason)]
            }
            // Named after the endpoint either way, so that the two reports of one refusal make one.
            let concernsEndpoint = named.contains { peer in
                LogSourceInfo(peer: peer) != nil && peer.addresses.contains { $0.hasSuffix(suffix) }
            }
            return concernsEndpoint
                ? [LogSourceRefusal(source: "\(endpoint.host):\(endpoint.port)", info: nil, reason: reason)] : []
        }
        return named.compactMap { peer in
            guard let info = LogSourceInfo(peer: peer), configuration.selector.matches(info) else { return nil }
            return LogSourceRefusal(source: name, info: info, reason: reason)
        }
    }

    private func connectLoop(
        _ endpoint: (host: String, port: Int), transceiver: Transceiver, state: ViewerState,
        input: AsyncStream<Inbound>.Continuation
    ) async {
        var announced = false
        while !Task.isCancelled {
            do {
                let peer = try await transceiver.connect(host: endpoint.host, port: endpoint.port)
                state.markDirect(peer.id)
                announced = false
                if let info = LogSourceInfo(peer: peer) {
                    if configuration.selector.matches(info) {
                        await subscribe(peer, info: info, transceiver: transceiver, state: state, input: input)
                    } else {
                        input.yield(
                            .problem(
                                "\(endpoint.host):\(endpoint.port) is \(info), which does not match \(configuration.selector)"
                            ))
                    }
                } else {
                    input.yield(.problem("\(endpoint.host):\(endpoint.port) is not a log source"))
                }
                // Wait for the connection to go away, then reconnect.
                while !Task.isCancelled, transceiver.connectedPeers.contains(where: { $0.id == peer.id }) {
                    try? await Task.sleep(for: .milliseconds(200))
                }
            } catch {
                if !announced {
                    input.yield(
                        .waiting(
                            "cannot reach \(endpoint.host):\(endpoint.port) (\(error)); retrying every \(configuration.reconnectInterval)"
                        ))
                    announced = true
                }
            }
            try? await Task.sleep(for: configuration.reconnectInterval)
        }
    }

    /// Once a second, makes the subscriptions match the connections: subscribes again to sources that went silent
    /// (their connection may have been replaced under us), and to connected sources without a subscription (a
    /// subscription request can fail when the connection it went out on is replaced by a newer one).
    private func reconcile(transceiver: Transceiver, state: ViewerState, input: AsyncStream<Inbound>.Continuation) async
    {
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(1))
            let connected = transceiver.connectedPeers
            let connectedIDs = Set(connected.map(\.id))
            for (peer, info) in state.removeSilent(longerThan: LogProtocol.silenceLimit)
            where connectedIDs.contains(peer.id) {
                await subscribe(peer, info: info, transceiver: transceiver, state: state, input: input)
            }
            for peer in connected {
                guard let info = LogSourceInfo(peer: peer), configuration.selector.matches(info),
                    configuration.endpoint == nil || state.isDirect(peer.id), !state.hasSubscription(peer.id)
                else { continue }
                await subscribe(peer, info: info, transceiver: transceiver, state: state, input: input)
            }
        }
    }

    private func subscribe(
        _ peer: Peer, info: LogSourceInfo, transceiver: Transceiver, state: ViewerState,
        input: AsyncStream<Inbound>.Continuation
    ) async {
        guard let (subscription, last) = state.begin(peer: peer, info: info) else { return }
        input.yield(.following(info, resumed: last != nil))
        // After the last sequence number there is, nothing can follow: ask from it again (what comes is dropped as
        // delivered) rather than overflow on a peer's number.
        let request = LogSubscribe(
            subscription: subscription, fromSequence: last.map { $0 == .max ? .max : $0 + 1 },
            stream: last == nil ? nil : info.streamID,
            history: configuration.history, follow: configuration.follow)
        do {
            _ = try await transceiver.request(request, to: peer, as: LogSubscribed.self, timeout: .seconds(10))
        } catch is CancellationError {
            return  // the viewer is ending (its reader left, or Ctrl-C): not a problem of the source
        } catch {
            input.yield(.problem("could not subscribe to \(info): \(error)"))
            input.yield(.sourceLost(peer.id))
        }
    }

    /// What the network side hands to the consuming loop.
    enum Inbound: Sendable {
        case waiting(String)
        case problem(String)
        case discoveryUnavailable(String)
        case following(LogSourceInfo, resumed: Bool)
        case batch(ParsedBatch)
        case lost(LogsLost)
        case end(UInt64)
        case sourceLost(String)
        case refused(LogSourceRefusal)
        case settled
    }
}
