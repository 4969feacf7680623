import Chirp
import ChirpLogs
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import SQLiteNIO

/// How much the store keeps. Records are removed oldest first once either limit is passed, and counted.
public struct ConsoleRetention: Sendable, Equatable {
    /// The most bytes of records (their text: message, label, metadata, HTTP exchange) kept. Default: 1 GiB.
    public var maximumBytes: Int
    /// Records older than this are removed. Default: 7 days.
    public var maximumAge: Duration

    /// Retention with the given limits (defaults: 1 GiB, 7 days).
    public init(maximumBytes: Int = 1 << 30, maximumAge: Duration = .seconds(7 * 86_400)) {
        self.maximumBytes = maximumBytes
        self.maximumAge = maximumAge
    }
}

/// What the store holds of one source (one stream: a run of one app).
public struct ConsoleSource: Sendable, Equatable {
    public var stream: String
    public var app: String
    public var host: String
    public var pid: Int32
    public var firstSeen: Date
    public var lastSeen: Date
    /// The last sequence number stored.
    public var lastSequence: UInt64
    /// Records stored (before retention removed any).
    public var records: Int
    /// Records the source reported lost (its buffer or spool overflowed).
    public var lost: Int
}

/// Latency and error figures of one HTTP endpoint (method, host and path).
public struct ConsoleEndpoint: Sendable, Equatable {
    public var method: String
    public var host: String?
    public var path: String
    public var count: Int
    /// Exchanges with a status of 400 or more, or no response.
    public var errors: Int
    /// Milliseconds.
    public var p50: Double
    public var p90: Double
    public var p99: Double
}

/// What retention removed in one pass.
public struct RetentionReport: Sendable, Equatable {
    public var removedRecords: Int
    public var removedBytes: Int
}

/// The console's store: one SQLite file in WAL mode, with a full-text index (FTS5) over messages, labels, metadata and
/// URLs. Writes go through this actor, one transaction per batch of records; reads use a second connection, so a
/// search never waits for an ingest (WAL lets readers and a writer work at once).
///
/// Each record is stored exactly once: `(stream, sequence)` is unique and inserts skip what is already there, and
/// ``positions()`` tells the collector where each stream continues after a restart.
public actor ConsoleStore {
    /// The file.
    public nonisolated let path: String
    private let writer: SQLiteConnection
    private let reader: SQLiteConnection
    private let retention: ConsoleRetention
    /// Bytes of records stored, removed by retention, and records removed (persisted in `counters`).
    private var storedBytes = 0
    private var removedRecords = 0
    private var removedBytes = 0
    private nonisolated let highestID = NIOLockedValueBox<Int64>(0)
    /// The last sequence number stored per stream, as far as this process wrote or read it.
    private var lastSequences: [String: UInt64] = [:]

    private static let columns = [
        "stream", "sequence", "time", "level", "label", "message", "metadata", "app", "host", "pid", "file", "function",
        "line", "method", "url", "urlhost", "path", "status", "duration", "http", "size"
    ]
    /// Rows per INSERT statement: one statement, and one hop to SQLite's thread, per this many records.
    private static let rowsPerStatement = 400
    private static let fullInsert = insertSQL(rows: rowsPerStatement)

    private init(path: String, writer: SQLiteConnection, reader: SQLiteConnection, retention: ConsoleRetention) {
        self.path = path
        self.writer = writer
        self.reader = reader
        self.retention = retention
    }

    /// Opens (or creates) the store at `path`.
    /// - Throws: an error naming the file when SQLite cannot open or migrate it.
    public static func open(
        path: String, retention: ConsoleRetention = ConsoleRetention(),
        logger: Logger = Logger(label: "chirp.console.store")
    ) async throws -> ConsoleStore {
        let writer: SQLiteConnection
        do {
            writer = try await SQLiteConnection.open(storage: .file(path: path), logger: logger)
        } catch {
            throw ConsoleStoreError("cannot open the store \(path): \(error)")
        }
        do {
            for statement in schema { _ = try await writer.query(statement) }
            let reader = try await SQLiteConnection.open(storage: .file(path: path), logger: logger)
            _ = try await reader.query("PRAGMA query_only = 1")
            _ = try await reader.query("PRAGMA cache_size = -65536")
            try await reader.install(customFunction: RegexFunction.make())
            let store = ConsoleStore(path: path, writer: writer, reader: reader, retention: retention)
            try await store.loadCounters()
            return store
        } catch {
            try? await writer.close()
            throw ConsoleStoreError("cannot prepare the store \(path): \(error)")
        }
    }

    /// Closes both connections (also when the calling task is cancelled: SQLiteNIO's close refuses to run in a
    /// cancelled task, so it runs in a task of its own).
    public func close() async {
        let (reader, writer) = (self.reader, self.writer)
        await Task.detached {
            try? await reader.close()
            try? await writer.close()
        }.value
    }

    static let schema = [
        "PRAGMA journal_mode = WAL",
        "PRAGMA synchronous = NORMAL",
        "PRAGMA busy_timeout = 5000",
        // 64 MiB of page cache: the full-text index's pages stay in memory while batches arrive.
        "PRAGMA cache_size = -65536",
        """
        CREATE TABLE IF NOT EXISTS sources(stream TEXT PRIMARY KEY, app TEXT NOT NULL, host TEXT NOT NULL,
            pid INTEGER NOT NULL, first_seen REAL NOT NULL, last_seen REAL NOT NULL, last_sequence INTEGER NOT NULL,
            records INTEGER NOT NULL DEFAULT 0, lost INTEGER NOT NULL DEFAULT 0)
        """,
        """
        CREATE TABLE IF NOT EXISTS records(id INTEGER PRIMARY KEY AUTOINCREMENT, stream TEXT NOT NULL,
            sequence INTEGER NOT NULL, time REAL NOT NULL, level INTEGER NOT NULL, label TEXT NOT NULL,
            message TEXT NOT NULL, metadata TEXT NOT NULL, app TEXT NOT NULL, host TEXT NOT NULL, pid INTEGER NOT NULL,
            file TEXT NOT NULL, function TEXT NOT NULL, line INTEGER NOT NULL, method TEXT, url TEXT, urlhost TEXT,
            path TEXT, status INTEGER, duration REAL, http TEXT, size INTEGER NOT NULL, UNIQUE(stream, sequence))
        """,
        "CREATE INDEX IF NOT EXISTS records_time ON records(time)",
        "CREATE INDEX IF NOT EXISTS records_exchange ON records(method, path) WHERE method IS NOT NULL",
        // detail='none': the index keeps which records hold a token, not where. The console's searches are words
        // and prefixes (RecordFilter quotes each word on its own), which need no positions; phrases would.
        """
        CREATE VIRTUAL TABLE IF NOT EXISTS records_fts USING fts5(message, label, metadata, url,
            content='records', content_rowid='id', detail='none', columnsize=0)
        """,
        """
        CREATE TRIGGER IF NOT EXISTS records_indexed AFTER INSERT ON records BEGIN
            INSERT INTO records_fts(rowid, message, label, metadata, url)
            VALUES (new.id, new.message, new.label, new.metadata, coalesce(new.url, ''));
        END
        """,
        """
        CREATE TRIGGER IF NOT EXISTS records_unindexed AFTER DELETE ON records BEGIN
            INSERT INTO records_fts(records_fts, rowid, message, label, metadata, url)
            VALUES ('delete', old.id, old.message, old.label, old.metadata, coalesce(old.url, ''));
        END
        """,
        "CREATE TABLE IF NOT EXISTS counters(name TEXT PRIMARY KEY, value INTEGER NOT NULL)"
    ]

    private func loadCounters() async throws {
        for row in try await writer.query("SELECT name, value FROM counters") {
            let value = row.column("value")?.integer ?? 0
            switch row.column("name")?.string {
            case "removed_records": removedRecords = value
            case "removed_bytes": removedBytes = value
            default: break
            }
        }
        let highest =
            try await writer.query("SELECT coalesce(max(id), 0) AS id FROM records").first?.column("id")?.integer ?? 0
        highestID.withLockedValue { $0 = Int64(highest) }
        // Measured once here rather than saved with every batch (one query less per batch): a sum over the store.
        storedBytes =
            try await writer.query("SELECT coalesce(sum(size), 0) AS s FROM records").first?.column("s")?.integer ?? 0
    }

    // MARK: - Writing

    /// Stores `records` of `source` in one transaction and returns how many were new (a record stored before, by
    /// its stream and sequence number, is skipped). Returns once they are on disk (as far as WAL with
    /// `synchronous = NORMAL` goes: a crash of the process loses nothing committed; a power cut may lose the last
    /// transactions).
    @discardableResult
    public func insert(_ records: [LogRecord], from source: LogSourceInfo, now: Date = Date()) async throws -> Int {
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
                    .text(source.streamID), .text(source.appName), .text(source.host), .integer(Int(source.processID)),
                    .float(now.timeIntervalSince1970), .float(now.timeIntervalSince1970), .integer(Int(clamping: last)),
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
        storedBytes += bytes
        let highest = try await writer.query("SELECT max(id) AS id FROM records").first?.column("id")?.integer ?? 0
        highestID.withLockedValue { $0 = Int64(highest) }
        return fresh.count
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
        _ = try await writer.query(
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

    private func saveCounter(_ name: String, _ value: Int) async throws {
        _ = try await writer.query(
            "INSERT INTO counters(name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value",
            [.text(name), .integer(value)])
    }

    /// Removes the oldest records while the store is over its size, and records older than its age limit.
    @discardableResult
    public func enforceRetention(now: Date = Date()) async throws -> RetentionReport {
        var report = RetentionReport(removedRecords: 0, removedBytes: 0)
        let cutoff = now.timeIntervalSince1970 - Double(retention.maximumAge.components.seconds)
        // 90% of the size limit, without overflowing for a limit near `Int.max` ("no limit").
        let lowWatermark = retention.maximumBytes - retention.maximumBytes / 10
        while true {
            // Oldest first, a thousand at a time: by age, then by size (down to 90% of the limit, so that retention
            // does not run for every batch once the store is full).
            let overAge =
                try await writer.query("SELECT count(*) AS n FROM records WHERE time < ?", [.float(cutoff)])
                .first?.column("n")?.integer ?? 0
            let overSize = storedBytes > retention.maximumBytes
            guard overAge > 0 || (overSize && storedBytes > 0) else { break }
            let condition = overAge > 0 ? "WHERE time < ?" : ""
            let binds: [SQLiteData] = overAge > 0 ? [.float(cutoff)] : []
            let oldest = try await writer.query(
                "SELECT id, size FROM records \(condition) ORDER BY id LIMIT 1000", binds)
            // Over the size limit: only as many as bring the store down to 90% of it.
            let excess = overAge > 0 ? Int.max : storedBytes - lowWatermark
            var last: Int?
            var count = 0
            var bytes = 0
            for row in oldest {
                guard let id = row.column("id")?.integer else { continue }
                last = id
                count += 1
                bytes += row.column("size")?.integer ?? 0
                if bytes >= excess { break }
            }
            guard let last else { break }
            _ = try await writer.query("BEGIN IMMEDIATE")
            do {
                _ = try await writer.query(
                    "DELETE FROM records WHERE id <= ?\(overAge > 0 ? " AND time < ?" : "")",
                    overAge > 0 ? [.integer(last), .float(cutoff)] : [.integer(last)])
                storedBytes = max(0, storedBytes - bytes)
                removedRecords += count
                removedBytes += bytes
                try await saveCounter("removed_records", removedRecords)
                try await saveCounter("removed_bytes", removedBytes)
                _ = try await writer.query("COMMIT")
            } catch {
                _ = try? await writer.query("ROLLBACK")
                throw error
            }
            report.removedRecords += count
            report.removedBytes += bytes
            if overAge == 0 && storedBytes <= lowWatermark { break }
        }
        return report
    }

    /// Bytes stored, and what retention removed so far (records and bytes).
    public func statistics() -> (storedBytes: Int, removedRecords: Int, removedBytes: Int) {
        (storedBytes, removedRecords, removedBytes)
    }

    // MARK: - Reading (on the reader connection)

    /// The last sequence number stored for each stream: where the collector continues after a restart.
    public nonisolated func positions() async throws -> [String: UInt64] {
        var positions: [String: UInt64] = [:]
        for row in try await reader.query("SELECT stream, last_sequence FROM sources WHERE last_sequence > 0") {
            guard let stream = row.column("stream")?.string, let last = row.column("last_sequence")?.integer else {
                continue
            }
            positions[stream] = UInt64(clamping: last)
        }
        return positions
    }

    /// The highest record id stored so far (0 when empty).
    public nonisolated var latestID: Int64 { highestID.withLockedValue { $0 } }

    /// Every source seen, most recently heard first.
    public nonisolated func sources() async throws -> [ConsoleSource] {
        try await reader.query("SELECT * FROM sources ORDER BY last_seen DESC LIMIT 1000").map { row in
            ConsoleSource(
                stream: row.column("stream")?.string ?? "", app: row.column("app")?.string ?? "",
                host: row.column("host")?.string ?? "", pid: Int32(clamping: row.column("pid")?.integer ?? 0),
                firstSeen: Date(timeIntervalSince1970: row.column("first_seen")?.double ?? 0),
                lastSeen: Date(timeIntervalSince1970: row.column("last_seen")?.double ?? 0),
                lastSequence: UInt64(clamping: row.column("last_sequence")?.integer ?? 0),
                records: row.column("records")?.integer ?? 0, lost: row.column("lost")?.integer ?? 0)
        }
    }

    /// The most bytes of stored records (their `size`) one page carries: a page ends early, with `hasMore`, rather
    /// than load that much (a source may send records of many MiB). A page always has at least one record.
    public static let pageBudgetBytes = 16 << 20

    /// A page of the records that match `filter`, in ascending id order, and whether more lie beyond it (older for
    /// ``RecordPage/latest`` and ``RecordPage/before(_:)``, newer for ``RecordPage/after(_:)``). A page holds `limit`
    /// records, or fewer when they would exceed ``pageBudgetBytes``.
    public nonisolated func records(
        matching filter: RecordFilter, page: RecordPage = .latest, limit: Int = RecordPage.defaultLimit
    ) async throws -> (records: [ConsoleRecord], hasMore: Bool) {
        let (match, condition, filterBinds) = filter.sql()
        var binds: [SQLiteData] = []
        var from = "records"
        var idColumn = "records.id"
        var conditions = [condition]
        if let match {
            // The index is walked in rowid (= id) order, and the page ends at its limit.
            from = "records_fts JOIN records ON records.id = records_fts.rowid"
            idColumn = "records_fts.rowid"
            conditions.insert("records_fts MATCH ?", at: 0)
            binds.append(.text(match))
        }
        binds += filterBinds
        let order: String
        switch page {
        case .latest:
            order = "DESC"
        case .before(let id):
            conditions.append("\(idColumn) < ?")
            binds.append(.integer(Int(id)))
            order = "DESC"
        case .after(let id):
            conditions.append("\(idColumn) > ?")
            binds.append(.integer(Int(id)))
            order = "ASC"
        }
        binds.append(.integer(limit + 1))
        // The page's ids and sizes first, then its records by id: as many as fit in the byte budget.
        let sizes = try await Self.searching {
            try await reader.query(
                "SELECT \(idColumn) AS id, records.size AS size FROM \(from) WHERE \(conditions.joined(separator: " AND ")) ORDER BY \(idColumn) \(order) LIMIT ?",
                binds)
        }
        var ids: [SQLiteData] = []
        var bytes = 0
        for row in sizes.prefix(limit) {
            let size = row.column("size")?.integer ?? 0
            if !ids.isEmpty && size > Self.pageBudgetBytes - bytes { break }
            ids.append(.integer(row.column("id")?.integer ?? 0))
            bytes += size
        }
        guard !ids.isEmpty else { return ([], false) }
        let placeholders = Array(repeating: "?", count: ids.count).joined(separator: ",")
        let rows = try await reader.query(
            "SELECT * FROM records WHERE id IN (\(placeholders)) ORDER BY id ASC", ids)
        return (rows.map(Self.record(from:)), sizes.count > ids.count)
    }

    /// Runs a query whose filter may search with a regular expression; one that ran out of its time budget becomes a
    /// request error that says so.
    private static func searching(_ query: () async throws -> [SQLiteRow]) async throws -> [SQLiteRow] {
        do {
            return try await query()
        } catch  where RegexFunction.timedOut(error) {
            throw ConsoleRequestError(
                "regex: the search took longer than \(RegexFunction.budget.components.seconds) s; use a simpler "
                    + "expression, or narrow the search with words, a level or a time range")
        }
    }

    /// Count, error count and latency percentiles per endpoint, for the exchanges that match `filter` (the latest
    /// 100,000 of them at most), busiest first.
    public nonisolated func endpoints(matching filter: RecordFilter) async throws -> [ConsoleEndpoint] {
        var exchanges = filter
        exchanges.onlyExchanges = true
        let (match, condition, filterBinds) = exchanges.sql()
        let from = match == nil ? "records" : "records_fts JOIN records ON records.id = records_fts.rowid"
        let whereClause = match == nil ? condition : "records_fts MATCH ? AND " + condition
        let binds = (match.map { [SQLiteData.text($0)] } ?? []) + filterBinds
        let rows = try await Self.searching {
            try await reader.query(
                """
                SELECT records.method, records.urlhost, records.path, records.status, records.duration FROM \(from)
                WHERE \(whereClause) ORDER BY records.id DESC LIMIT 100000
                """, binds)
        }
        struct Key: Hashable { var method: String, host: String?, path: String }
        var durations: [Key: [Double]] = [:]
        var errors: [Key: Int] = [:]
        for row in rows {
            let key = Key(
                method: row.column("method")?.string ?? "", host: row.column("urlhost")?.string,
                path: row.column("path")?.string ?? "")
            durations[key, default: []].append((row.column("duration")?.double ?? 0) * 1000)
            let status = row.column("status")?.integer
            if status == nil || status! >= 400 { errors[key, default: 0] += 1 }
        }
        return durations.map { key, values in
            let sorted = values.sorted()
            func percentile(_ p: Double) -> Double {
                sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
            }
            return ConsoleEndpoint(
                method: key.method, host: key.host, path: key.path, count: sorted.count,
                errors: errors[key] ?? 0, p50: percentile(0.5), p90: percentile(0.9), p99: percentile(0.99))
        }.sorted { $0.count == $1.count ? ($0.path, $0.method) < ($1.path, $1.method) : $0.count > $1.count }
    }

    // MARK: - Rows

    private static func insertSQL(rows: Int) -> String {
        let row = "(" + Array(repeating: "?", count: columns.count).joined(separator: ",") + ")"
        return "INSERT OR IGNORE INTO records(\(columns.joined(separator: ","))) VALUES "
            + Array(repeating: row, count: rows).joined(separator: ",")
    }

    /// Appends the bound values of one row; returns the bytes it counts for retention.
    private static func bind(_ record: LogRecord, stream: String, into binds: inout [SQLiteData]) -> Int {
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

    private static func record(from row: SQLiteRow) -> ConsoleRecord {
        let metadataText = row.column("metadata")?.string ?? "{}"
        var metadata: Logger.Metadata = [:]
        if case .object(let entries)? = try? JSONDecoder().decode(JSONValue.self, from: Data(metadataText.utf8)) {
            metadata = entries.mapValues(\.metadataValue)
        }
        let http = row.column("http")?.string.flatMap {
            try? JSONDecoder().decode(StoredExchange.self, from: Data($0.utf8))
        }
        let record = LogRecord(
            sequence: UInt64(clamping: row.column("sequence")?.integer ?? 0),
            timestamp: Date(timeIntervalSince1970: row.column("time")?.double ?? 0),
            level: LevelRank.level(row.column("level")?.integer ?? 2),
            label: row.column("label")?.string ?? "", message: row.column("message")?.string ?? "",
            metadata: metadata, file: row.column("file")?.string ?? "", function: row.column("function")?.string ?? "",
            line: UInt(clamping: row.column("line")?.integer ?? 0), appName: row.column("app")?.string ?? "",
            host: row.column("host")?.string ?? "", processID: Int32(clamping: row.column("pid")?.integer ?? 0),
            http: http?.exchange)
        return ConsoleRecord(
            id: Int64(row.column("id")?.integer ?? 0), stream: row.column("stream")?.string ?? "", record: record)
    }
}

/// The store could not be opened or written; the message names the file.
public struct ConsoleStoreError: Error, CustomStringConvertible, Sendable {
    public var description: String
    init(_ description: String) { self.description = description }
}

/// `chirp_regexp(pattern, text, deadline)`: SQLite has no regular expressions of its own. Patterns are compiled once
/// and kept (at most 64; they were checked when the request was parsed).
///
/// A search has a time budget (``budget``): an expression that backtracks without end (`(a+)+$` over a long run of
/// `a`) would otherwise hold the store's one reader connection, and every other page's requests with it. `deadline`
/// (`DispatchTime` uptime nanoseconds, from ``deadline()``) is bound by the query; a call after it, or a match that
/// runs past it, fails the query with ``TimedOut``, which the store turns into a request error.
enum RegexFunction {
    private static let cache = NIOLockedValueBox<[String: NSRegularExpression]>([:])

    /// How long one query's regular expression may run, over all the records it looks at.
    static let budget: Duration = .seconds(2)

    /// The search ran out of its ``budget``.
    struct TimedOut: Error, CustomStringConvertible {
        static let marker = "chirp_regexp: time budget exceeded"
        var description: String { Self.marker }
    }

    /// The deadline to bind for a query that starts now.
    static func deadline() -> Int {
        Int(clamping: DispatchTime.now().uptimeNanoseconds + UInt64(TimeAmount(budget).nanoseconds))
    }

    /// Whether `error`, from a query, is a search that ran out of its budget: SQLiteNIO fails the query with the
    /// description of what the function threw as its message (the error itself does not cross SQLite).
    static func timedOut(_ error: any Error) -> Bool {
        (error as? SQLiteError)?.message == TimedOut.marker
    }

    static func make() -> SQLiteCustomFunction {
        // Not `pure`: the answer depends on the time, through the deadline.
        SQLiteCustomFunction("chirp_regexp", argumentCount: 3) { arguments in
            guard let pattern = arguments[0].string, let text = arguments[1].string,
                let deadline = arguments[2].integer.map({ UInt64(clamping: $0) })
            else { return false }
            guard let regex = compiled(pattern) else { return false }
            guard DispatchTime.now().uptimeNanoseconds < deadline else { throw TimedOut() }
            var found = false
            var late = false
            // `.reportProgress` calls back during a long match, so that a runaway one can be stopped.
            regex.enumerateMatches(
                in: text, options: [.reportProgress], range: NSRange(text.startIndex..., in: text)
            ) { match, _, stop in
                if match != nil {
                    found = true
                    stop.pointee = true
                } else if DispatchTime.now().uptimeNanoseconds >= deadline {
                    late = true
                    stop.pointee = true
                }
            }
            if late && !found { throw TimedOut() }
            return found
        }
    }

    private static func compiled(_ pattern: String) -> NSRegularExpression? {
        if let regex = cache.withLockedValue({ $0[pattern] }) { return regex }
        guard let regex = try? NSRegularExpression(pattern: pattern) else { return nil }
        cache.withLockedValue { cache in
            if cache.count >= 64 { cache.removeAll() }
            cache[pattern] = regex
        }
        return regex
    }
}
