import Chirp
import ChirpLogs
import Foundation
import NIOCore
import SQLiteNIO

extension ConsoleStore {
    /// The columns an insert fills, in the order of ``bind(_:stream:into:)``.
    static let columns = [
        "stream", "sequence", "time", "level", "label", "message", "metadata", "app", "host", "pid", "file", "function",
        "line", "method", "url", "urlhost", "path", "status", "duration", "http", "size"
    ]
    /// Rows per INSERT statement: one statement, and one hop to SQLite's thread, per this many records.
    static let rowsPerStatement = 400
    private static let fullInsert = insertSQL(rows: rowsPerStatement)

    /// Stores `records` of `source` in one transaction and returns how many were new (a record stored before, by
    /// its stream and sequence number, is skipped). Returns once they are on disk (as far as WAL with
    /// `synchronous = NORMAL` goes: a crash of the process loses nothing committed; a power cut may lose the last
    /// transactions).
    @discardableResult
    public func insert(_ records: [LogRecord], from source: LogSourceInfo, now: Date = Date()) async throws -> Int {
        // One transaction at a time on the writer: from reading what a stream stored to the highest id stored.
        try await withWriter { () -> Int in
            // What a stream already stored is known here (its last sequence number): a batch sent again after a restart
            // is trimmed before it reaches SQLite, whose unique (stream, sequence) stays the guarantee.
            let known = try await lastSequence(of: source.streamID)
            // Sequence numbers only grow within a stream: a record at or below the one before it (a resent record, or
            // a source that breaks the protocol) is not stored again, so the counts below are exact. Numbers past
            // `Int64.max`, which SQLite cannot hold exactly (no source numbering from 1 reaches them), are not stored.
            var fresh: [LogRecord] = []
            fresh.reserveCapacity(records.count)
            var floor = known
            for record in records
            where record.sequence <= UInt64(Int64.max) && (floor.map { record.sequence > $0 } ?? true) {
                fresh.append(record)
                floor = record.sequence
            }
            guard !fresh.isEmpty else { return 0 }
            var bytes = 0
            // Pipelined: SQLite runs one statement on its thread while this task builds the bound values of the next
            // (a third of the work), instead of one waiting for the other. One statement at a time still: the next is
            // submitted only once the one before it is done, so the transaction's statements keep their order.
            var running: EventLoopFuture<[SQLiteRow]>? = writer.query("BEGIN IMMEDIATE")
            do {
                var start = 0
                while start < fresh.count {
                    let chunk = fresh[start..<min(start + Self.rowsPerStatement, fresh.count)]
                    var binds: [SQLiteData] = []
                    binds.reserveCapacity(chunk.count * Self.columns.count)
                    for record in chunk { bytes += Self.bind(record, stream: source.streamID, into: &binds) }
                    let sql = chunk.count == Self.rowsPerStatement ? Self.fullInsert : Self.insertSQL(rows: chunk.count)
                    if let previous = running {
                        running = nil
                        _ = try await previous.get()
                    }
                    running = writer.query(sql, binds)
                    start += chunk.count
                }
                if let last = running {
                    running = nil
                    _ = try await last.get()
                }
                let last = fresh.map(\.sequence).max() ?? 0
                _ = try await writer.query(
                    """
                    INSERT INTO sources(stream, app, host, pid, first_seen, last_seen, last_sequence, records)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT(stream) DO UPDATE SET last_seen = excluded.last_seen,
                        last_sequence = max(last_sequence, excluded.last_sequence), records = records + excluded.records
                    """,
                    [
                        .text(source.streamID), .text(source.appName), .text(source.host),
                        .integer(Int(source.processID)),
                        .float(now.timeIntervalSince1970), .float(now.timeIntervalSince1970),
                        .integer(Int(clamping: last)),
                        .integer(fresh.count)
                    ])
                _ = try await writer.query("COMMIT")
                lastSequences[source.streamID] = max(last, known ?? 0)
            } catch {
                _ = try? await running?.get()  // the statement still running ends before the rollback
                _ = try? await writer.query("ROLLBACK")
                lastSequences[source.streamID] = nil  // read it again from the store next time
                throw error
            }
            usage.stored(bytes: bytes)
            let highest = try await writer.query("SELECT max(id) AS id FROM records").first?.column("id")?.integer ?? 0
            highestID.withLockedValue { $0 = Int64(highest) }
            return fresh.count
        }
    }

    /// The last sequence number stored for `stream` (cached; read once from the store).
    private func lastSequence(of stream: String) async throws -> UInt64? {
        if let known = lastSequences[stream] { return known }
        let rows = try await writer.query("SELECT last_sequence FROM sources WHERE stream = ?", [.text(stream)])
        let known = rows.first?.column("last_sequence")?.integer.map { UInt64(clamping: $0) }
        if let known { lastSequences[stream] = known }
        return known
    }

    /// Notes that `source` lost records (its buffer or spool overflowed); shown with the source. The count saturates
    /// at `Int.max` rather than overflowing: a peer's numbers are not trusted (SQLite would turn an overflowing sum
    /// into a `REAL`, which no longer reads back as an integer).
    public func noteLost(_ loss: LogLoss, from source: LogSourceInfo, now: Date = Date()) async throws {
        // Through the gate: a statement run while another call's transaction is open would join it.
        _ = try await withWriter {
            try await writer.query(
                """
                INSERT INTO sources(stream, app, host, pid, first_seen, last_seen, last_sequence, lost)
                VALUES (?, ?, ?, ?, ?, ?, 0, ?)
                ON CONFLICT(stream) DO UPDATE SET
                    lost = CASE WHEN excluded.lost > 9223372036854775807 - lost THEN 9223372036854775807
                        ELSE lost + excluded.lost END,
                    last_seen = excluded.last_seen
                """,
                [
                    .text(source.streamID), .text(source.appName), .text(source.host), .integer(Int(source.processID)),
                    .float(now.timeIntervalSince1970), .float(now.timeIntervalSince1970),
                    .integer(Int(clamping: loss.count))
                ])
        }
    }

    /// Notes the device fingerprint `source` uses (its device identity), shown with the source: the source is listed
    /// from then on, with no record yet if it sent none (a source that refused the console, or that the console
    /// refused, is listed that way). A fingerprint noted later replaces this one (the app's device identity changed).
    public func noteFingerprint(_ fingerprint: Fingerprint, of source: LogSourceInfo, now: Date = Date()) async throws {
        _ = try await withWriter {
            try await writer.query(
                """
                INSERT INTO sources(stream, app, host, pid, first_seen, last_seen, last_sequence, fingerprint)
                VALUES (?, ?, ?, ?, ?, ?, 0, ?)
                ON CONFLICT(stream) DO UPDATE SET fingerprint = excluded.fingerprint
                """,
                [
                    .text(source.streamID), .text(source.appName), .text(source.host), .integer(Int(source.processID)),
                    .float(now.timeIntervalSince1970), .float(now.timeIntervalSince1970),
                    .text(fingerprint.description)
                ])
        }
    }

    /// One INSERT of `rows` records: a row of ``columns``' placeholders each; a record already stored is skipped.
    static func insertSQL(rows: Int) -> String {
        let row = "(" + Array(repeating: "?", count: columns.count).joined(separator: ",") + ")"
        return "INSERT OR IGNORE INTO records(\(columns.joined(separator: ","))) VALUES "
            + Array(repeating: row, count: rows).joined(separator: ",")
    }

    /// Appends the bound values of one row, in the order of ``columns``; returns the bytes it counts for retention.
    static func bind(_ record: LogRecord, stream: String, into binds: inout [SQLiteData]) -> Int {
        let metadata = JSONText.string(.metadata(record.metadata))
        let exchange = record.http.map(StoredExchange.init)
        let httpJSON = exchange.flatMap { try? String(decoding: JSONEncoder().encode($0), as: UTF8.self) }
        binds.append(.text(stream))
        binds.append(.integer(Int(clamping: record.sequence)))
        binds.append(.float(record.timestamp.timeIntervalSince1970))
        binds.append(.integer(LevelRank.rank(record.level)))
        binds.append(.text(record.label))
        binds.append(.text(record.message))
        binds.append(.text(metadata))
        binds.append(.text(record.appName))
        binds.append(.text(record.host))
        binds.append(.integer(Int(record.processID)))
        binds.append(.text(record.file))
        binds.append(.text(record.function))
        binds.append(.integer(Int(clamping: record.line)))
        binds.append(exchange.map { .text($0.method) } ?? .null)
        binds.append(exchange.map { .text($0.url) } ?? .null)
        binds.append(exchange?.host.map { .text($0) } ?? .null)
        binds.append(exchange.map { .text($0.path) } ?? .null)
        binds.append(exchange?.status.map { .integer($0) } ?? .null)
        binds.append(exchange.map { .float($0.duration) } ?? .null)
        binds.append(httpJSON.map { .text($0) } ?? .null)
        let size =
            64 + record.message.utf8.count + record.label.utf8.count + metadata.utf8.count + (httpJSON?.utf8.count ?? 0)
        binds.append(.integer(size))
        return size
    }
}
