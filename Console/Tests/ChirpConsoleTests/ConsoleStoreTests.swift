import ChirpLogs
import ChirpTestSupport
import Foundation
import Logging
import Testing

@testable import ChirpConsole

/// The store on a real SQLite file: exactly once, search and filters, paging, retention, reopening.
@Suite(.timeLimit(.minutes(3))) struct ConsoleStoreTests {
    static let source = LogSourceInfo(
        appName: "orders", host: "alpha", processID: 42, streamID: "stream-a", peerID: "p1")

    static func record(
        _ sequence: UInt64, _ message: String = "", level: Logger.Level = .info, label: String = "app.main",
        time: Date = Date(), http: HTTPExchange? = nil, metadata: Logger.Metadata = [:]
    ) -> LogRecord {
        LogRecord(
            sequence: sequence, timestamp: time, level: level, label: label,
            message: message.isEmpty ? "record \(sequence)" : message, metadata: metadata,
            appName: "orders", host: "alpha", processID: 42, http: http)
    }

    /// Runs `body` with a store in a new file (and the file's path), and closes the store whether `body` returned or
    /// threw.
    static func withStore(
        _ retention: ConsoleRetention = ConsoleRetention(), _ body: (ConsoleStore, String) async throws -> Void
    ) async throws {
        let path = TestSupport.temporaryDirectory() + "/console.sqlite"
        let store = try await ConsoleStore.open(path: path, retention: retention)
        try await withTeardown {
            try await body(store, path)
        } teardown: {
            await store.close()
        }
    }

    @Test func eachSequenceNumberIsStoredOnceAndTheStreamContinuesAfterTheLast() async throws {
        try await Self.withStore { store, _ in
            #expect(try await store.insert((1...100).map { Self.record($0) }, from: Self.source) == 100)
            // A batch sent again after a restart overlaps what is stored: only the new half is kept.
            #expect(try await store.insert((51...150).map { Self.record($0) }, from: Self.source) == 50)
            #expect(try await store.positions() == ["stream-a": 150])
            let all = try await store.records(matching: RecordFilter(), page: .latest, limit: 1000).records
            #expect(all.map(\.record.sequence) == Array(1...150))
            #expect(try await store.sources().first?.records == 150)
            // A source that breaks the protocol: repeated and backward sequence numbers in one batch.
            #expect(
                try await store.insert([151, 152, 152, 153, 140, 154].map { Self.record($0) }, from: Self.source) == 4)
            let tail = try await store.records(matching: RecordFilter(), page: .latest, limit: 5).records.map(
                \.record.sequence)
            #expect(tail == [150, 151, 152, 153, 154])
            #expect(try await store.sources().first?.records == 154)
            #expect(store.latestID == 154)
            // Numbers SQLite cannot hold exactly are not stored (they would all become Int64.max) nor counted.
            let huge: [UInt64] = [155, 1 << 63, (1 << 63) + 1, .max]
            #expect(try await store.insert(huge.map { Self.record($0) }, from: Self.source) == 1)
            #expect(try await store.sources().first?.records == 155)
            #expect(try await store.positions() == ["stream-a": 155])
        }
    }

    @Test func searchAndFiltersFindExactlyTheMatchingRecords() async throws {
        try await Self.withStore { store, _ in
            let hour = Date(timeIntervalSince1970: 1_800_000_000)
            let exchange = HTTPExchange(
                method: "POST", url: "http://shop.local:8080/orders?id=7", status: 503, duration: 0.25)
            try await store.insert(
                [
                    Self.record(1, "order placed by Zoë", time: hour),
                    Self.record(
                        2, "payment declined", level: .error, label: "app.payments", time: hour.addingTimeInterval(60)),
                    Self.record(
                        3, "cache miss", level: .debug, time: hour.addingTimeInterval(120), metadata: ["key": "item:42"]
                    ),
                    Self.record(
                        4, "called POST /orders", level: .info, time: hour.addingTimeInterval(180), http: exchange)
                ], from: Self.source)
            func sequences(_ parameters: [String: String]) async throws -> [UInt64] {
                try await store.records(matching: RecordFilter(parameters: parameters)).records.map(\.record.sequence)
            }
            #expect(try await sequences([:]) == [1, 2, 3, 4])  // control: everything
            #expect(try await sequences(["q": "payment"]) == [2])
            #expect(try await sequences(["q": "paym"]) == [2])  // the last word is a prefix
            #expect(try await sequences(["q": "Zoë"]) == [1])
            #expect(try await sequences(["q": "item 42"]) == [3])  // metadata is indexed
            #expect(try await sequences(["q": "shop"]) == [4])  // and URLs
            #expect(try await sequences(["q": "nothing-like-this"]) == [])
            #expect(try await sequences(["level": "warning"]) == [2])
            #expect(try await sequences(["label": "app.payments"]) == [2])
            #expect(try await sequences(["regex": "^c.*s$"]) == [3, 4])
            #expect(try await sequences(["from": "2027-01-15T08:01:00Z", "to": "2027-01-15T08:02:00Z"]) == [2, 3])
            #expect(try await sequences(["http": "1"]) == [4])
            #expect(try await sequences(["status": "5xx"]) == [4])
            #expect(try await sequences(["status": "404"]) == [])
            #expect(try await sequences(["method": "post", "path": "/orders"]) == [4])
            #expect(try await sequences(["app": "orders", "host": "alpha", "pid": "42"]) == [1, 2, 3, 4])
            #expect(try await sequences(["pid": "43"]) == [])
            let endpoints = try await store.endpoints(matching: RecordFilter())
            #expect(
                endpoints == [
                    ConsoleEndpoint(
                        method: "POST", host: "shop.local:8080", path: "/orders", count: 1, errors: 1, p50: 250,
                        p90: 250,
                        p99: 250)
                ])
        }
    }

    @Test func aSearchForWordsJoinedByPunctuationFindsThatTextAndNothingElse() async throws {
        try await Self.withStore { store, _ in
            let exchange = HTTPExchange(method: "GET", url: "http://shop.local/items/7", status: 200, duration: 0.01)
            try await store.insert(
                [
                    Self.record(1, "item 7 added to items"),  // both words, not together
                    Self.record(2, "7 items in the basket"),
                    Self.record(3, "GET /items/7 answered"),
                    Self.record(4, "listed items; 70 left"),  // "items" and a word starting with 7
                    Self.record(5, "fetched", http: exchange),  // in the URL only
                    Self.record(6, "GET /ITEMS/75"),  // the last word is a prefix; ASCII case is not compared
                    Self.record(7, "declined", metadata: ["code": "card_declined"]),
                    Self.record(8, "card declined")
                ], from: Self.source)
            func sequences(_ query: String) async throws -> [UInt64] {
                try await store.records(matching: RecordFilter(parameters: ["q": query])).records.map(\.record.sequence)
            }
            #expect(try await sequences("items/7") == [3, 5, 6])
            #expect(try await sequences("\"items/7\"") == [3, 5, 6])  // quotes around a term are dropped
            #expect(try await sequences("items/7 answered") == [3])
            #expect(try await sequences("card_declined") == [7])  // metadata
            #expect(try await sequences("items 7") == [1, 2, 3, 4, 5, 6])  // control: words apart match anywhere
            #expect(try await sequences("/") == [1, 2, 3, 4, 5, 6, 7, 8])  // no word: no search
        }
    }

    @Test func pagesWalkBackAndForwardWithoutGapsOrRepeats() async throws {
        try await Self.withStore { store, _ in
            try await store.insert((1...25).map { Self.record($0) }, from: Self.source)
            let latest = try await store.records(matching: RecordFilter(), page: .latest, limit: 10)
            #expect(latest.records.map(\.record.sequence) == Array(16...25))
            #expect(latest.hasMore)
            var older = try await store.records(
                matching: RecordFilter(), page: .before(latest.records[0].id), limit: 10)
            #expect(older.records.map(\.record.sequence) == Array(6...15))
            older = try await store.records(matching: RecordFilter(), page: .before(older.records[0].id), limit: 10)
            #expect(older.records.map(\.record.sequence) == Array(1...5))
            #expect(!older.hasMore)
            let newer = try await store.records(matching: RecordFilter(), page: .after(older.records[4].id), limit: 7)
            #expect(newer.records.map(\.record.sequence) == Array(6...12))
            #expect(store.latestID == latest.records.last?.id)
        }
    }

    @Test func aPageEndsEarlyRatherThanCarryMoreThanItsByteBudget() async throws {
        try await Self.withStore { store, _ in
            let large = String(repeating: "x", count: 7 << 20)  // 7 MiB: two fit in the 16 MiB budget, three do not
            try await store.insert((1...3).map { Self.record($0, large) }, from: Self.source)
            try await store.insert([Self.record(4, "small")], from: Self.source)
            let latest = try await store.records(matching: RecordFilter(), page: .latest, limit: 10)
            #expect(latest.records.map(\.record.sequence) == [2, 3, 4])  // the newest first, until the budget
            #expect(latest.hasMore)
            let older = try await store.records(
                matching: RecordFilter(), page: .before(latest.records[0].id), limit: 10)
            #expect(older.records.map(\.record.sequence) == [1])
            #expect(!older.hasMore)
            // Walking forward ends early the same way, and a record over the budget on its own still comes alone.
            let newer = try await store.records(matching: RecordFilter(), page: .after(0), limit: 10)
            #expect(newer.records.map(\.record.sequence) == [1, 2] && newer.hasMore)
            try await store.insert([Self.record(5, String(repeating: "y", count: 20 << 20))], from: Self.source)
            let huge = try await store.records(matching: RecordFilter(), page: .latest, limit: 10)
            #expect(huge.records.map(\.record.sequence) == [5] && huge.hasMore)
            // Control: small records fill the whole limit.
            let small = try await store.records(
                matching: RecordFilter(parameters: ["q": "small"]), page: .latest, limit: 10)
            #expect(small.records.map(\.record.sequence) == [4] && !small.hasMore)
        }
    }

    @Test func retentionRemovesTheOldestRecordsOverTheSizeLimitAndCountsThem() async throws {
        try await Self.withStore(ConsoleRetention(maximumBytes: 1 << 20, maximumAge: .seconds(86_400))) { store, _ in
            let text = String(repeating: "x", count: 1000)
            for batch in 0..<30 {
                try await store.insert((1...100).map { Self.record(UInt64(batch * 100) + $0, text) }, from: Self.source)
            }
            let before = await store.statistics()
            #expect(before.storedBytes > 3 << 20)  // control: well over the limit before retention
            let report = try await store.enforceRetention()
            let after = await store.statistics()
            #expect(after.storedBytes <= 1 << 20)
            #expect(report.removedRecords > 2000)
            #expect(after.removedRecords == report.removedRecords)
            let kept = try await store.records(matching: RecordFilter(), page: .latest, limit: 1000).records
            #expect(kept.last?.record.sequence == 3000)  // the newest stay
            #expect(kept.first.map { $0.record.sequence > UInt64(report.removedRecords) } == true)
            // The full-text index lost the removed records too: a search finds exactly the records kept.
            #expect(
                try await store.records(matching: RecordFilter(parameters: ["q": "xxxx"]), limit: 1000).records.count
                    == kept.count)
        }
    }

    @Test func retentionRemovesRecordsOlderThanTheAgeLimit() async throws {
        try await Self.withStore(ConsoleRetention(maximumBytes: 1 << 30, maximumAge: .seconds(3600))) { store, _ in
            let now = Date()
            try await store.insert(
                [
                    Self.record(1, time: now.addingTimeInterval(-7200)),
                    Self.record(2, time: now.addingTimeInterval(-3700)),
                    Self.record(3, time: now.addingTimeInterval(-60))
                ], from: Self.source)
            let report = try await store.enforceRetention(now: now)
            #expect(report.removedRecords == 2)
            #expect(try await store.records(matching: RecordFilter()).records.map(\.record.sequence) == [3])
            #expect(try await store.enforceRetention(now: now).removedRecords == 0)
        }
    }

    @Test func limitsMeantAsNoLimitKeepEverything() async throws {
        try await Self.withStore(ConsoleRetention(maximumBytes: .max, maximumAge: .seconds(Int64.max))) { store, _ in
            let now = Date()
            try await store.insert(
                [Self.record(1, time: now.addingTimeInterval(-86_400 * 3650)), Self.record(2, time: now)],
                from: Self.source
            )
            #expect(try await store.enforceRetention(now: now).removedRecords == 0)
            #expect(try await store.records(matching: RecordFilter()).records.map(\.record.sequence) == [1, 2])
        }
    }

    @Test func lossCountsFromAPeerAddUpWithoutOverflowing() async throws {
        try await Self.withStore { store, _ in
            try await store.noteLost(LogLoss(from: 1, through: 3, reason: "buffer full"), from: Self.source)
            #expect(try await store.sources().first?.lost == 3)  // control: counts add up
            // Two notices whose counts each fit in an Int but whose sum does not: the count stops at Int.max.
            try await store.noteLost(
                LogLoss(from: 4, through: 5_000_000_000_000_000_000, reason: "spool full"), from: Self.source)
            try await store.noteLost(
                LogLoss(from: 5_000_000_000_000_000_001, through: 10_000_000_000_000_000_000, reason: "spool full"),
                from: Self.source)
            #expect(try await store.sources().first?.lost == .max)
            try await store.noteLost(LogLoss(from: 1, through: .max, reason: "spool full"), from: Self.source)
            #expect(try await store.sources().first?.lost == .max)
        }
    }

    // The time limit turns the search running on without end (what this guards against) into a failure, not a hang.
    @Test(.timeLimit(.minutes(1)))
    func aRegularExpressionThatBacktracksWithoutEndIsStoppedWithAReason() async throws {
        try await Self.withStore { store, _ in
            // Runs of `a` that end in `!`: `(a+)+$` tries every way to split each run before it fails.
            let text = String(repeating: "a", count: 40) + "!"
            try await store.insert((1...20).map { Self.record($0, text) }, from: Self.source)
            // Control: a plain expression over the same records finds them all.
            let plain = try await store.records(matching: RecordFilter(parameters: ["regex": "a+!$"]))
            #expect(plain.records.count == 20)
            await #expect {
                _ = try await store.records(matching: RecordFilter(parameters: ["regex": "(a+)+$"]))
            } throws: { error in
                (error as? ConsoleRequestError)?.message.hasPrefix("regex: the search took longer than 2 s") == true
            }
            // The reader connection serves the next request.
            #expect(try await store.records(matching: RecordFilter(parameters: ["regex": "a+!$"])).records.count == 20)
        }
    }

    @Test func whatIsStoredSurvivesClosingAndOpeningAgain() async throws {
        var written: (bytes: Int, path: String)?
        try await Self.withStore { store, path in
            try await store.insert((1...10).map { Self.record($0) }, from: Self.source)
            try await store.noteLost(LogLoss(from: 11, through: 13, reason: "buffer full"), from: Self.source)
            written = (await store.statistics().storedBytes, path)
        }
        let (bytes, path) = try #require(written)
        let reopened = try await ConsoleStore.open(path: path)
        try await withTeardown {
            let positions = try await reopened.positions()
            #expect(positions == ["stream-a": 10])
            #expect(await reopened.statistics().storedBytes == bytes)
            #expect(try await reopened.sources().first?.lost == 3)
            #expect(reopened.latestID == 10)
            #expect(try await reopened.insert((11...12).map { Self.record($0) }, from: Self.source) == 2)
        } teardown: {
            await reopened.close()
        }
    }

    @Test func untrustedTextIsStoredAndReturnedAsItCame() async throws {
        try await Self.withStore { store, _ in
            let hostile = "<img src=x onerror=\"alert(1)\">\u{1B}[31m\u{202E}evil\"; DROP TABLE records; --"
            try await store.insert(
                [Self.record(1, hostile, label: "<b>label</b>", metadata: ["k\"ey": .string("v\n<script>")])],
                from: Self.source)
            let stored = try #require(try await store.records(matching: RecordFilter()).records.first)
            #expect(stored.record.message == hostile)
            #expect(stored.record.label == "<b>label</b>")
            #expect(stored.record.metadata["k\"ey"] == .string("v\n<script>"))
            #expect(try await store.records(matching: RecordFilter(parameters: ["q": "DROP TABLE"])).records.count == 1)
        }
    }

    @Test func aFileThatIsNotAStoreIsRefusedWithItsName() async throws {
        let path = TestSupport.temporaryDirectory() + "/console.sqlite"
        try Data("this is not a database, it is a text file that is long enough to be read".utf8).write(
            to: URL(fileURLWithPath: path))
        await #expect {
            _ = try await ConsoleStore.open(path: path)
        } throws: { error in
            "\(error)".contains(path)
        }
    }
}
