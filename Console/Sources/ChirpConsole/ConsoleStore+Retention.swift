import Foundation
import SQLiteNIO

extension ConsoleStore {
    /// Removes the oldest records while the store is over its size, and records older than its age limit.
    @discardableResult
    public func enforceRetention(now: Date = Date()) async throws -> RetentionReport {
        var report = RetentionReport(removedRecords: 0, removedBytes: 0)
        let cutoff = now.timeIntervalSince1970 - Double(retention.maximumAge.components.seconds)
        // 90% of the size limit, without overflowing for a limit near `Int.max` ("no limit").
        let lowWatermark = retention.maximumBytes - retention.maximumBytes / 10
        while true {
            // A thousand records a transaction, each with the writer to itself (from what is due to the counters):
            // inserts go on between them.
            let removed = try await withWriter { () -> (records: Int, bytes: Int, overAge: Bool)? in
                // Oldest first: by age, then by size (down to 90% of the limit, so that retention does not run for
                // every batch once the store is full).
                let overAge =
                    try await writer.query("SELECT count(*) AS n FROM records WHERE time < ?", [.float(cutoff)])
                    .first?.column("n")?.integer ?? 0
                let overSize = usage.storedBytes > retention.maximumBytes
                guard overAge > 0 || (overSize && usage.storedBytes > 0) else { return nil }
                let condition = overAge > 0 ? "WHERE time < ?" : ""
                let binds: [SQLiteData] = overAge > 0 ? [.float(cutoff)] : []
                let oldest = try await writer.query(
                    "SELECT id, size FROM records \(condition) ORDER BY id LIMIT 1000", binds)
                // Over the size limit: only as many as bring the store down to 90% of it.
                let excess = overAge > 0 ? Int.max : usage.storedBytes - lowWatermark
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
                guard let last else { return nil }
                // The counters as they will be once the records are gone: saved with the DELETE, and kept in
                // memory only once both are committed.
                var after = usage
                after.removed(records: count, bytes: bytes)
                _ = try await writer.query("BEGIN IMMEDIATE")
                do {
                    _ = try await writer.query(
                        "DELETE FROM records WHERE id <= ?\(overAge > 0 ? " AND time < ?" : "")",
                        overAge > 0 ? [.integer(last), .float(cutoff)] : [.integer(last)])
                    try await after.saveCounters(on: writer)
                    _ = try await writer.query("COMMIT")
                } catch {
                    _ = try? await writer.query("ROLLBACK")
                    throw error
                }
                usage.removed(records: count, bytes: bytes)
                return (count, bytes, overAge > 0)
            }
            guard let removed else { break }
            report.removedRecords += removed.records
            report.removedBytes += removed.bytes
            if !removed.overAge && usage.storedBytes <= lowWatermark { break }
        }
        return report
    }

    /// Bytes stored, and what retention removed so far (records and bytes).
    public func statistics() -> (storedBytes: Int, removedRecords: Int, removedBytes: Int) {
        (usage.storedBytes, usage.removedRecords, usage.removedBytes)
    }
}

/// The bytes of records a store holds (their `size`, as retention counts them), and what retention removed so far
/// (kept in the `counters` table, so that the figures survive a restart).
struct StoreUsage: Equatable {
    var storedBytes = 0
    var removedRecords = 0
    var removedBytes = 0

    /// Records of `bytes` were stored.
    mutating func stored(bytes: Int) {
        storedBytes += bytes
    }

    /// Retention removed `records` records of `bytes`.
    mutating func removed(records: Int, bytes: Int) {
        storedBytes = max(0, storedBytes - bytes)
        removedRecords += records
        removedBytes += bytes
    }

    /// The figures of the store on `connection`: the counters as saved, and the bytes stored measured once (a sum over
    /// the store, rather than saved with every batch: one query less per batch).
    static func load(from connection: SQLiteConnection) async throws -> StoreUsage {
        var usage = StoreUsage()
        for row in try await connection.query("SELECT name, value FROM counters") {
            let value = row.column("value")?.integer ?? 0
            switch row.column("name")?.string {
            case "removed_records": usage.removedRecords = value
            case "removed_bytes": usage.removedBytes = value
            default: break
            }
        }
        usage.storedBytes =
            try await connection.query("SELECT coalesce(sum(size), 0) AS s FROM records").first?.column("s")?.integer
            ?? 0
        return usage
    }

    /// Saves what retention removed (in the caller's transaction).
    func saveCounters(on connection: SQLiteConnection) async throws {
        for (name, value) in [("removed_records", removedRecords), ("removed_bytes", removedBytes)] {
            _ = try await connection.query(
                "INSERT INTO counters(name, value) VALUES (?, ?) "
                    + "ON CONFLICT(name) DO UPDATE SET value = excluded.value",
                [.text(name), .integer(value)])
        }
    }
}
