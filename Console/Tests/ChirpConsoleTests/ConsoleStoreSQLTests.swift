import ChirpLogs
import Foundation
import SQLiteNIO
import Testing

@testable import ChirpConsole

/// The store's pure parts, without a file: the SQL it builds, its endpoint figures, and its byte counts.
@Suite(.timeLimit(.minutes(1))) struct ConsoleStoreSQLTests {
    @Test func anInsertHasOneRowOfPlaceholdersPerRecord() {
        let columns = ConsoleStore.columns.count
        let sql = ConsoleStore.insertSQL(rows: 3)
        #expect(sql.hasPrefix("INSERT OR IGNORE INTO records(stream,sequence,time,"))
        #expect(sql.filter { $0 == "?" }.count == 3 * columns)
        let row = "(" + Array(repeating: "?", count: columns).joined(separator: ",") + ")"
        #expect(sql.hasSuffix(" VALUES \(row),\(row),\(row)"))
        #expect(ConsoleStore.insertSQL(rows: 1).filter { $0 == "?" }.count == columns)
    }

    @Test func aRowBindsOneValuePerColumn() {
        var binds: [SQLiteData] = []
        let record = LogRecord(sequence: 7, timestamp: Date(), level: .info, label: "app", message: "hello")
        let plain = ConsoleStore.bind(record, stream: "s", into: &binds)
        #expect(binds.count == ConsoleStore.columns.count)
        #expect(binds.first == .text("s") && binds.last == .integer(plain))
        #expect(plain == 64 + "hello".utf8.count + "app".utf8.count + "{}".utf8.count)
    }

    @Test func theLatestPageWalksBackFromTheNewestAndAsksForOneMore() {
        let (sql, binds) = ConsoleStore.pageSQL(RecordFilter(), page: .latest, limit: 10)
        #expect(
            sql == "SELECT records.id AS id, records.size AS size FROM records WHERE 1 "
                + "ORDER BY records.id DESC LIMIT ?")
        #expect(binds == [.integer(11)])
    }

    @Test func aPageAfterAnIdWalksForwardAndOneBeforeItBack() {
        let after = ConsoleStore.pageSQL(RecordFilter(), page: .after(42), limit: 5)
        #expect(after.sql.hasSuffix("WHERE 1 AND records.id > ? ORDER BY records.id ASC LIMIT ?"))
        #expect(after.binds == [.integer(42), .integer(6)])
        let before = ConsoleStore.pageSQL(RecordFilter(), page: .before(42), limit: 5)
        #expect(before.sql.hasSuffix("WHERE 1 AND records.id < ? ORDER BY records.id DESC LIMIT ?"))
        #expect(before.binds == [.integer(42), .integer(6)])
    }

    @Test func aSearchForWordsWalksTheFullTextIndexWithTheWordsBoundNeverSpliced() throws {
        let filter = try RecordFilter(parameters: ["q": "payment declined", "level": "error"])
        let (sql, binds) = ConsoleStore.pageSQL(filter, page: .before(9), limit: 1)
        #expect(
            sql == "SELECT records_fts.rowid AS id, records.size AS size FROM records_fts JOIN records ON "
                + "records.id = records_fts.rowid WHERE records_fts MATCH ? AND records.level >= ? AND "
                + "records_fts.rowid < ? ORDER BY records_fts.rowid DESC LIMIT ?")
        #expect(!sql.contains("payment") && !sql.contains("declined"))
        let level = SQLiteData.integer(LevelRank.rank(.error))
        #expect(binds == [.text("\"payment\" \"declined\"*"), level, .integer(9), .integer(2)])
    }

    @Test func endpointFiguresArePerEndpointBusiestFirst() {
        func exchange(_ path: String, _ status: Int?, _ seconds: Double, method: String = "GET")
            -> ConsoleEndpoint.Exchange
        {
            .init(method: method, host: "shop", path: path, status: status, duration: seconds)
        }
        let summaries = ConsoleEndpoint.summaries(
            of: (1...10).map { exchange("/a", $0 == 10 ? 500 : 200, Double($0) * 0.125) }
                + [
                    exchange("/c", 200, 0.25), exchange("/b", nil, 0.5), exchange("/b", 404, 1.5),
                    exchange("/b", 399, 1, method: "POST")
                ])
        #expect(summaries.map(\.path) == ["/a", "/b", "/b", "/c"])
        let a = summaries[0]
        #expect(a.count == 10 && a.errors == 1)
        // Nearest rank over 125, 250 ... 1250 ms: the 50th percentile is the 6th value (index 4.5, rounded up), the
        // 90th the 9th (index 8.1), the 99th the 10th (index 8.91).
        #expect(a.p50 == 750 && a.p90 == 1125 && a.p99 == 1250)
        // No response, and a status of 400 or more, are errors; 399 is not.
        #expect(summaries[1].method == "GET" && summaries[1].count == 2 && summaries[1].errors == 2)
        #expect(summaries[1].p50 == 1500 && summaries[1].p90 == 1500)
        // As busy as each other: by path, then method.
        #expect(summaries[2].method == "POST" && summaries[2].errors == 0 && summaries[2].p50 == 1000)
        #expect(summaries[3].path == "/c" && summaries[3].count == 1)
        #expect(ConsoleEndpoint.summaries(of: []) == [])
    }

    @Test func theBytesStoredNeverGoBelowNothing() {
        var usage = StoreUsage()
        usage.stored(bytes: 100)
        usage.removed(records: 2, bytes: 60)
        #expect(usage == StoreUsage(storedBytes: 40, removedRecords: 2, removedBytes: 60))
        usage.removed(records: 1, bytes: 100)
        #expect(usage == StoreUsage(storedBytes: 0, removedRecords: 3, removedBytes: 160))
    }
}
