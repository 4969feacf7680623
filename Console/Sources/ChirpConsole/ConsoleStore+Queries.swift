import Chirp
import ChirpLogs
import Foundation
import Logging
import SQLiteNIO

// The queries, all on the reader connection: they never wait for the actor, nor for an ingest.
extension ConsoleStore {
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
                records: row.column("records")?.integer ?? 0, lost: row.column("lost")?.integer ?? 0,
                fingerprint: row.column("fingerprint")?.string.flatMap { try? Fingerprint(parsing: $0) })
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
        let (sql, binds) = Self.pageSQL(filter, page: page, limit: limit)
        // The page's ids and sizes first, then its records by id: as many as fit in the byte budget.
        let sizes = try await Self.searching { try await reader.query(sql, binds) }
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

    /// The query of a page's ids and sizes (`id`, `size`): at most `limit + 1` rows (the one past the limit says that
    /// more lie beyond), from the latest (or the given id) backwards, or forwards after an id.
    static func pageSQL(_ filter: RecordFilter, page: RecordPage, limit: Int) -> (sql: String, binds: [SQLiteData]) {
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
        let sql =
            "SELECT \(idColumn) AS id, records.size AS size FROM \(from) WHERE \(conditions.joined(separator: " AND ")) ORDER BY \(idColumn) \(order) LIMIT ?"
        return (sql, binds)
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
        return ConsoleEndpoint.summaries(
            of: rows.map { row in
                ConsoleEndpoint.Exchange(
                    method: row.column("method")?.string ?? "", host: row.column("urlhost")?.string,
                    path: row.column("path")?.string ?? "", status: row.column("status")?.integer,
                    duration: row.column("duration")?.double ?? 0)
            })
    }

    /// Runs a query whose filter may search with a regular expression; one that ran out of its time budget becomes a
    /// request error that says so.
    private static func searching(_ query: () async throws -> [SQLiteRow]) async throws -> [SQLiteRow] {
        do {
            return try await query()
        } catch  where RegexSQLFunction.timedOut(error) {
            throw ConsoleRequestError(
                "regex: the search took longer than \(RegexSQLFunction.budget.components.seconds) s; use a simpler "
                    + "expression, or narrow the search with words, a level or a time range")
        }
    }

    /// A stored row as the record it was (its metadata and exchange decoded from their JSON).
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
