import Chirp
import Dispatch
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// The sending side of a ``LogSource``: one serial queue that takes records from the ``LogBuffer`` and hands them to
/// the spool, to in-process subscribers and to viewer sessions. All encoding happens here, never in a log call.
///
/// It runs in passes. A pass that did work schedules the next one after `flushInterval` (so records that keep coming
/// are batched without waking this queue per record); a pass that found nothing arms the buffer's wake-up, so the
/// next log call starts a pass at once. Acknowledgements, new subscriptions and disconnects also start a pass.
final class LogPump: @unchecked Sendable {
    // @unchecked: every `var` below is touched only on `queue`, except `immediatePending` (its own lock) and
    // `counters` (a locked box).
    let queue = DispatchQueue(label: "chirp.logs.sender")
    let buffer: LogBuffer
    let spool: LogSpool?
    let origin: RecordCoding.Origin
    let streamID: String
    let configuration: LogSourceConfiguration
    /// The source's transceiver, set on `queue` (``attach(_:)``).
    private weak var transceiver: Transceiver?
    /// Where problems are logged.
    let logger: Logger
    /// The source's swift-metrics, fed from ``counters`` after each pass.
    private let metrics: LogMetrics
    /// What the metrics were last given, and the records spooled since (on `queue`).
    private var reported = LogSourceStatistics()
    private var spooledSinceReport = 0

    private var sessions: [Session] = []
    /// The memory entries are encoded into, kept from one batch to the next (on `queue`).
    private var scratch: [UInt8] = []
    private var subscribers: [Subscriber] = []
    private var nextSubscriberID = 0
    /// With a spool: the last record written to it. Viewers get records only once they are spooled, so that a
    /// restarted app never reuses a sequence number a viewer has seen.
    private var spooledThrough: UInt64
    private var timerPending = false
    /// The first sequence number of this process (the spool may have numbered earlier ones).
    private let firstSequenceOfProcess: UInt64
    private let immediatePending = NIOLockedValueBox(false)
    let counters = NIOLockedValueBox(LogSourceStatistics())

    struct Session {
        let subscription: UInt64
        let peer: Peer
        let follow: Bool
        /// The last record of the history (the end for a subscription without `follow`).
        let end: UInt64
        /// Whether this viewer's acknowledgements release records from the spool (it received everything before).
        let releasesSpool: Bool
        var cursor: UInt64
        /// When something was last sent (uptime nanoseconds), for status messages.
        var lastActivity = DispatchTime.now().uptimeNanoseconds
        var inflight: [(last: UInt64, bytes: Int)] = []
        var inflightBytes = 0
    }

    struct Subscriber {
        let id: Int
        let continuation: AsyncStream<LogStreamEvent>.Continuation
        var cursor: UInt64
    }

    init(
        buffer: LogBuffer, spool: LogSpool?, origin: RecordCoding.Origin, streamID: String,
        configuration: LogSourceConfiguration,
        logger: Logger = Logger(label: "chirp.logs", factory: { _ in SwiftLogNoOpLogHandler() })
    ) {
        self.logger = logger
        self.metrics = LogMetrics(appName: configuration.appName, factory: configuration.transceiver.metricsFactory)
        self.buffer = buffer
        self.spool = spool
        self.origin = origin
        self.streamID = streamID
        self.configuration = configuration
        self.spooledThrough = buffer.bounds.next &- 1
        self.firstSequenceOfProcess = buffer.bounds.next
        buffer.setWake { [weak self] in self?.requestPass() }
        if spool != nil { requestPass() }
    }

    /// Gives the pump its transceiver, on its queue: a pass may already be running (with a spool, one starts at
    /// once), and reads it there.
    func attach(_ transceiver: Transceiver) {
        queue.async { self.transceiver = transceiver }
    }

    // MARK: Scheduling

    /// Runs a pass soon (coalesced with one already requested).
    func requestPass() {
        let schedule = immediatePending.withLockedValue { pending -> Bool in
            if pending { return false }
            pending = true
            return true
        }
        if schedule { queue.async { self.runPass() } }
    }

    private func runPass() {
        immediatePending.withLockedValue { $0 = false }
        buffer.disarm()
        let observedNext = buffer.bounds.next
        let worked = pass()
        if worked {
            if !timerPending {
                timerPending = true
                let nanoseconds = Int(clamping: configuration.flushInterval.timeAmount.nanoseconds)
                queue.asyncAfter(deadline: .now() + .nanoseconds(max(0, nanoseconds))) {
                    self.timerPending = false
                    self.runPass()
                }
            }
        } else if isInterestedInNewRecords, !timerPending {
            if !buffer.arm(ifNextIs: observedNext) { requestPass() }
        }
        updateCounters()
    }

    /// Copies the state of the buffer, the sessions and the spool into ``counters``. On `queue`.
    private func updateCounters() {
        let now = counters.withLockedValue { counters in
            counters.logged = buffer.bounds.next &- firstSequenceOfProcess
            counters.viewers = sessions.count
            counters.unacknowledgedInSpool = spool?.unacknowledged ?? 0
            counters.evictedFromSpool = spool?.evicted ?? 0
            return counters
        }
        func delta(_ path: KeyPath<LogSourceStatistics, UInt64>) -> Int64 {
            now[keyPath: path] > reported[keyPath: path]
                ? Int64(clamping: now[keyPath: path] - reported[keyPath: path]) : 0
        }
        let logged = delta(\.logged)
        if logged > 0 { metrics.logged.increment(by: logged) }
        let viewers = delta(\.lostToViewers)
        if viewers > 0 { metrics.droppedForViewers.increment(by: viewers) }
        let spoolLoss = delta(\.notSpooled) + delta(\.evictedFromSpool)
        if spoolLoss > 0 { metrics.droppedForSpool.increment(by: spoolLoss) }
        let subscribers = delta(\.droppedForSubscribers)
        if subscribers > 0 { metrics.droppedForSubscribers.increment(by: subscribers) }
        if spooledSinceReport > 0 { metrics.spooled.increment(by: Int64(spooledSinceReport)) }
        spooledSinceReport = 0
        reported = now
    }

    /// Writes every record logged until now to the spool (when there is one), on the queue, and returns once it is
    /// written: a graceful shutdown does not wait for the next pass.
    func spoolEverything() async {
        guard spool != nil else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async {
                let target = self.buffer.bounds.next
                while self.spooledThrough &+ 1 < target {
                    let (oldest, next) = self.buffer.bounds
                    guard self.spoolNewRecords(oldest: oldest, next: next) else { break }
                }
                self.spool?.flushAcknowledgement()
                self.updateCounters()
                continuation.resume()
            }
        }
    }

    /// Whether a new record would let this pump do something (otherwise it waits for acknowledgements).
    private var isInterestedInNewRecords: Bool {
        spool != nil || !subscribers.isEmpty
            || sessions.contains { $0.follow && $0.inflightBytes < configuration.windowBytes }
    }

    /// The pump's encoding memory, empty, for the caller to fill and give back with ``returnScratch(_:)`` (on
    /// `queue`): taken out of the property so that filling it copies nothing.
    private func takeScratch() -> [UInt8] {
        var bytes: [UInt8] = []
        swap(&bytes, &scratch)
        bytes.removeAll(keepingCapacity: true)
        return bytes
    }

    /// Keeps `bytes`' memory for the next batch, unless a burst made it larger than a batch needs.
    private func returnScratch(_ bytes: [UInt8]) {
        if bytes.capacity <= 4 * configuration.batchBytes { scratch = bytes }
    }

    // MARK: Pass

    private func pass() -> Bool {
        var worked = false
        let (oldest, next) = buffer.bounds
        if spool != nil { worked = spoolNewRecords(oldest: oldest, next: next) || worked }
        let deliverable = spool != nil ? spooledThrough : next &- 1
        for index in subscribers.indices { worked = feed(&subscribers[index], through: next &- 1) || worked }
        var index = 0
        while index < sessions.count {
            let (didWork, keep) = serve(&sessions[index], deliverable: deliverable)
            worked = worked || didWork
            if keep { index += 1 } else { sessions.remove(at: index) }
        }
        spool?.flushAcknowledgement()
        return worked
    }

    /// Writes new records to the spool, up to a bounded amount per pass.
    private func spoolNewRecords(oldest: UInt64, next: UInt64) -> Bool {
        guard let spool else { return false }
        var worked = false
        for _ in 0..<16 {
            var cursor = spooledThrough &+ 1
            if cursor >= next { break }
            if cursor < buffer.bounds.oldest {
                let missed = buffer.bounds.oldest - cursor
                counters.withLockedValue { $0.notSpooled += missed }
                spooledThrough = buffer.bounds.oldest &- 1
                cursor = spooledThrough &+ 1
            }
            let records = buffer.read(from: cursor, maximumCount: configuration.batchRecords)
            guard let first = records.first, let last = records.last else { break }
            if first.sequence > cursor { counters.withLockedValue { $0.notSpooled += first.sequence - cursor } }
            var entries = takeScratch()
            for record in records { RecordCoding.writeEntry(record, into: &entries) }
            do {
                try spool.append(entries, first: first.sequence, last: last.sequence, count: records.count)
            } catch {
                logger.error("log spool: \(error)")
            }
            returnScratch(entries)
            spooledThrough = last.sequence
            spooledSinceReport += records.count
            worked = true
        }
        return worked
    }

    /// Feeds an in-process subscriber.
    private func feed(_ subscriber: inout Subscriber, through last: UInt64) -> Bool {
        guard subscriber.cursor <= last else { return false }
        var worked = false
        while subscriber.cursor <= last {
            let records = buffer.read(from: subscriber.cursor, maximumCount: 512, through: last)
            guard let first = records.first else {
                // Everything from the cursor on was overwritten; the next pass starts at the oldest.
                break
            }
            if first.sequence > subscriber.cursor {
                let loss = LogLoss(from: subscriber.cursor, through: first.sequence - 1, reason: "buffer full")
                subscriber.continuation.yield(.lost(loss))
                counters.withLockedValue { $0.droppedForSubscribers += loss.count }
            }
            for record in records {
                if case .dropped = subscriber.continuation.yield(.record(makeRecord(record))) {
                    counters.withLockedValue { $0.droppedForSubscribers += 1 }
                }
            }
            subscriber.cursor = (records.last?.sequence ?? first.sequence) + 1
            worked = true
        }
        return worked
    }

    func makeRecord(_ pending: PendingRecord) -> LogRecord {
        let event = pending.event
        return LogRecord(
            sequence: pending.sequence, timestamp: Date(timeIntervalSince1970: Double(pending.timeNanos) / 1e9),
            level: event.level, label: pending.label, message: event.message.description,
            metadata: pending.mergedMetadata, source: event.source, file: event.file, function: event.function,
            line: event.line, appName: origin.appName, host: origin.host, processID: origin.processID,
            http: pending.http?.exchange)
    }

    /// Sends what one viewer session can take; returns whether it did anything and whether to keep the session.
    private func serve(_ session: inout Session, deliverable: UInt64) -> (worked: Bool, keep: Bool) {
        guard let transceiver else { return (false, false) }
        var worked = false
        let target = session.follow ? deliverable : min(deliverable, session.end)
        while session.inflightBytes < configuration.windowBytes {
            if session.cursor > target {
                if !session.follow && session.cursor > session.end {
                    let end = LogsEnd(subscription: session.subscription, through: session.end)
                    _ = try? transceiver.send(end, to: session.peer)
                    return (true, false)
                }
                break
            }
            let oldest = buffer.bounds.oldest
            do {
                if session.cursor < oldest {
                    try serveFromSpool(&session, target: target, oldest: oldest, transceiver: transceiver)
                } else {
                    try serveFromBuffer(&session, target: target, transceiver: transceiver)
                }
                worked = true
            } catch {
                logger.debug(
                    "log viewer dropped", metadata: ["peer": "\(session.peer)", "reason": "\(error)"])
                return (worked, false)
            }
        }
        return (worked, true)
    }

    private func serveFromSpool(_ session: inout Session, target: UInt64, oldest: UInt64, transceiver: Transceiver)
        throws
    {
        if let spool, let chunk = spool.read(from: session.cursor, maximumBytes: configuration.batchBytes),
            chunk.first <= target
        {
            if chunk.first > session.cursor {
                try reportLost(&session, through: chunk.first - 1, reason: "spool full", transceiver: transceiver)
            }
            // Trim to the target (a subscription without follow stops at its end).
            var entries = chunk.entries
            var count = 0
            var last = chunk.first
            let start = entries.readerIndex
            while let (sequence, length) = RecordCoding.peekEntry(entries), sequence <= target {
                count += 1
                last = sequence
                entries.moveReaderIndex(forwardBy: length)
            }
            let slice = RecordCoding.bytes(of: entries, from: start, to: entries.readerIndex)
            try sendBatch(&session, entries: slice, count: count, last: last, transceiver: transceiver)
        } else {
            let through = min(oldest, target &+ 1) &- 1
            try reportLost(
                &session, through: through, reason: spool == nil ? "buffer full" : "spool full",
                transceiver: transceiver)
        }
    }

    private func serveFromBuffer(_ session: inout Session, target: UInt64, transceiver: Transceiver) throws {
        let records = buffer.read(from: session.cursor, maximumCount: configuration.batchRecords, through: target)
        guard let first = records.first else {
            // Overwritten since we looked: the next round reports the loss.
            if session.cursor < buffer.bounds.oldest { return }
            session.cursor = target &+ 1
            return
        }
        if first.sequence > session.cursor {
            try reportLost(
                &session, through: first.sequence - 1, reason: spool == nil ? "buffer full" : "spool full",
                transceiver: transceiver)
        }
        // The batch is encoded straight behind its header, in memory this pump reuses; the message's `Data` is its
        // one copy.
        var payload = takeScratch()
        LogProtocol.writeBatchHeader(subscription: session.subscription, count: 0, into: &payload)
        var count = 0
        var last = first.sequence
        for record in records {
            if count > 0 && payload.count - LogProtocol.batchHeaderSize >= configuration.batchBytes { break }
            RecordCoding.writeEntry(record, into: &payload)
            count += 1
            last = record.sequence
        }
        LogProtocol.setBatchCount(count, in: &payload)
        let data = Data(payload)
        returnScratch(payload)
        try sendBatch(&session, payload: data, last: last, transceiver: transceiver)
    }

    /// Sends a batch of entries read from the spool.
    private func sendBatch(
        _ session: inout Session, entries: ByteBuffer, count: Int, last: UInt64, transceiver: Transceiver
    ) throws {
        var payload = takeScratch()
        LogProtocol.writeBatchHeader(subscription: session.subscription, count: count, into: &payload)
        payload.append(contentsOf: entries.readableBytesView)
        let data = Data(payload)
        returnScratch(payload)
        try sendBatch(&session, payload: data, last: last, transceiver: transceiver)
    }

    private func sendBatch(_ session: inout Session, payload: Data, last: UInt64, transceiver: Transceiver) throws {
        let bytes = payload.count
        let message = RawMessage(typeName: LogProtocol.batchTypeName, payload: payload, isBinary: true)
        try transceiver.send(message, to: session.peer)
        session.cursor = last &+ 1
        session.lastActivity = DispatchTime.now().uptimeNanoseconds
        session.inflight.append((last, bytes))
        session.inflightBytes += bytes
    }

    private func reportLost(_ session: inout Session, through: UInt64, reason: String, transceiver: Transceiver) throws
    {
        guard through >= session.cursor else { return }
        let lost = LogsLost(subscription: session.subscription, from: session.cursor, through: through, reason: reason)
        try transceiver.send(lost, to: session.peer)
        counters.withLockedValue { $0.lostToViewers += through - session.cursor + 1 }
        session.cursor = through &+ 1
        session.lastActivity = DispatchTime.now().uptimeNanoseconds
    }

    // MARK: Status

    private var statusScheduled = false

    /// Every ``LogProtocol/statusInterval`` while sessions exist: tells quiet sessions the source is alive.
    private func scheduleStatus() {
        guard !statusScheduled, !sessions.isEmpty else { return }
        statusScheduled = true
        queue.asyncAfter(deadline: .now() + .seconds(1)) {
            self.statusScheduled = false
            self.sendStatus()
            self.scheduleStatus()
        }
    }

    private func sendStatus() {
        guard let transceiver else { return }
        let now = DispatchTime.now().uptimeNanoseconds
        let latest = buffer.bounds.next &- 1
        sessions.removeAll { session in
            guard now &- session.lastActivity >= 900_000_000 else { return false }
            do {
                try transceiver.send(LogStatus(subscription: session.subscription, latest: latest), to: session.peer)
                return false
            } catch {
                return true
            }
        }
        for index in sessions.indices where now &- sessions[index].lastActivity >= 900_000_000 {
            sessions[index].lastActivity = now
        }
    }

    // MARK: Requests from viewers (any thread)

    /// Installs a session for `request` from `peer` and returns the reply.
    func subscribe(_ request: LogSubscribe, from peer: Peer) async -> LogSubscribed {
        await withCheckedContinuation { continuation in
            queue.async {
                continuation.resume(returning: self.installSession(request, peer: peer))
                self.requestPass()
            }
        }
    }

    private func installSession(_ request: LogSubscribe, peer: Peer) -> LogSubscribed {
        let (oldest, next) = buffer.bounds
        let latest = spool != nil ? spooledThrough : next &- 1
        let lowest = min(spool?.firstSequence ?? oldest, oldest)
        let start: UInt64
        var continuing = false
        if let from = request.fromSequence, request.stream == streamID {
            start = min(max(from, 1), latest &+ 1)
            continuing = true
        } else {
            let history = UInt64(max(0, request.history ?? configuration.history))
            let wanted = latest &+ 1 > history ? latest &+ 1 - history : 1
            start = max(wanted, lowest)
        }
        let releases = continuing || start <= (spool?.ackedThrough ?? 0) &+ 1
        sessions.removeAll { $0.peer.id == peer.id }
        sessions.append(
            Session(
                subscription: request.subscription, peer: peer, follow: request.follow, end: latest,
                releasesSpool: releases,
                cursor: start))
        counters.withLockedValue { $0.viewers = sessions.count }
        scheduleStatus()
        return LogSubscribed(
            subscription: request.subscription, stream: streamID, app: origin.appName, host: origin.host,
            pid: origin.processID, firstSequence: start, lastSequence: latest)
    }

    /// A viewer handled everything through `through`.
    func acknowledge(subscription: UInt64, through: UInt64, from peer: Peer) {
        queue.async {
            guard
                let index = self.sessions.firstIndex(where: { $0.subscription == subscription && $0.peer.id == peer.id }
                )
            else { return }
            var session = self.sessions[index]
            while let first = session.inflight.first, first.last <= through {
                session.inflight.removeFirst()
                session.inflightBytes -= first.bytes
            }
            if session.releasesSpool { self.spool?.acknowledge(through: min(through, session.cursor &- 1)) }
            self.sessions[index] = session
            self.requestPass()
        }
    }

    /// The viewer is gone.
    func removeSessions(of peer: Peer) {
        queue.async {
            self.sessions.removeAll { $0.peer.id == peer.id }
            self.counters.withLockedValue { $0.viewers = self.sessions.count }
        }
    }

    /// Ends every session (the source stops).
    func removeAllSessions() {
        queue.async {
            self.sessions.removeAll()
            self.spool?.flushAcknowledgement()
        }
    }

    // MARK: In-process subscribers

    /// A stream of records from the `history` most recent on, for code inside the app.
    func subscribe(bufferingNewest limit: Int, history: Int) -> AsyncStream<LogStreamEvent> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: LogStreamEvent.self, bufferingPolicy: .bufferingNewest(max(1, limit)))
        // The start is fixed now, so that records logged right after this call are never missed.
        let (oldest, next) = buffer.bounds
        let wanted = UInt64(max(0, history))
        let start = max(oldest, next > wanted ? next - wanted : 0)
        queue.async {
            let id = self.nextSubscriberID
            self.nextSubscriberID += 1
            self.subscribers.append(Subscriber(id: id, continuation: continuation, cursor: start))
            continuation.onTermination = { [weak self] _ in
                guard let self else { return }
                self.queue.async { self.subscribers.removeAll { $0.id == id } }
            }
            self.requestPass()
        }
        return stream
    }
}
