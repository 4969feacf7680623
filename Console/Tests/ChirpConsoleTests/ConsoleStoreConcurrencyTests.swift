import ChirpLogs
import ChirpTestSupport
import Foundation
import SQLiteNIO
import Testing

@testable import ChirpConsole

/// Ingest, retention and loss notices at once on one store, as the console runs them (the collector's inserts, the
/// retention task every 30 s): each transaction runs whole, and the store's counters agree with its rows.
@Suite(.timeLimit(.minutes(2))) struct ConsoleStoreConcurrencyTests {
    static func source(_ stream: String) -> LogSourceInfo {
        LogSourceInfo(appName: "orders", host: "alpha", processID: 42, streamID: stream, peerID: "p-\(stream)")
    }

    /// What `body` returned or threw.
    static func outcome<T: Sendable>(_ body: () async throws -> T) async -> Result<T, any Error> {
        do { return .success(try await body()) } catch { return .failure(error) }
    }

    /// One stream: one insert at a time, with retention and a loss notice beside it; three: inserts beside each other too.
    @Test(arguments: [1, 3])
    func insertsRetentionAndLossNoticesAtOnceLoseNothingAndKeepTheCountersTrue(streamCount: Int) async throws {
        let now = Date()
        let old = now.addingTimeInterval(-7200)  // past the age limit: retention removes these
        let streams = Array(["stream-a", "stream-b", "stream-c"].prefix(streamCount))
        let rounds = 60
        let (oldPerBatch, newPerBatch) = (10, 10)
        let path = TestSupport.temporaryDirectory() + "/console.sqlite"
        let store = try await ConsoleStore.open(
            path: path, retention: ConsoleRetention(maximumBytes: 1 << 30, maximumAge: .seconds(3600)))
        try await withTeardown {
            // One batch of a stream in a round: old records, then new ones (sequence numbers only grow).
            @Sendable func batch(_ round: Int) -> [LogRecord] {
                let first = UInt64(round * (oldPerBatch + newPerBatch))
                return (1...(oldPerBatch + newPerBatch)).map { offset in
                    LogRecord(
                        sequence: first + UInt64(offset), timestamp: offset <= oldPerBatch ? old : now, level: .info,
                        label: "app.main", message: "round \(round) record \(offset)", metadata: [:],
                        appName: "orders", host: "alpha", processID: 42)
                }
            }
            var failures: [String] = []
            for round in 0..<rounds {
                async let inserts = withTaskGroup(of: (String, Result<Int, any Error>).self) { group in
                    for stream in streams {
                        group.addTask {
                            (
                                stream,
                                await Self.outcome {
                                    try await store.insert(batch(round), from: Self.source(stream), now: now)
                                }
                            )
                        }
                    }
                    return await group.reduce(into: []) { $0.append($1) }
                }
                async let retention = Self.outcome { try await store.enforceRetention(now: now) }
                async let lost = Self.outcome {
                    try await store.noteLost(
                        LogLoss(from: 1, through: 1, reason: "buffer full"), from: Self.source(streams[0]), now: now)
                }
                for (stream, result) in await inserts {
                    if case .failure(let error) = result {
                        failures.append("round \(round), insert \(stream): \(error)")
                    }
                    if case .success(let count) = result, count != oldPerBatch + newPerBatch {
                        failures.append("round \(round), insert \(stream) stored \(count)")
                    }
                }
                if case .failure(let error) = await retention { failures.append("round \(round), retention: \(error)") }
                if case .failure(let error) = await lost { failures.append("round \(round), noteLost: \(error)") }
                if !failures.isEmpty { break }
            }
            try #require(failures.isEmpty, "\(failures.joined(separator: "\n"))")
            // What is due after the last round goes too; then only the new records are left, each exactly once.
            try await store.enforceRetention(now: now)
            let rows = try await store.reader.query(
                "SELECT stream, sequence, count(*) AS n, sum(time < ?) AS due FROM records GROUP BY stream, sequence",
                [.float(now.timeIntervalSince1970 - 3600)])
            #expect(rows.allSatisfy { $0.column("n")?.integer == 1 && $0.column("due")?.integer == 0 })
            let newPerStream = Set(
                (0..<rounds).flatMap { round in
                    ((oldPerBatch + 1)...(oldPerBatch + newPerBatch)).map { round * (oldPerBatch + newPerBatch) + $0 }
                })
            for stream in streams {
                let stored = Set(
                    rows.filter { $0.column("stream")?.string == stream }.compactMap { $0.column("sequence")?.integer })
                let missing = newPerStream.subtracting(stored).sorted()
                #expect(
                    stored.count == newPerStream.count && missing.isEmpty, "\(stream): missing \(missing.prefix(5))")
            }
            // The counters (in memory and in the file) agree with the rows: bytes stored, records removed.
            let statistics = await store.statistics()
            let onDisk = try await StoreUsage.load(from: store.reader)
            #expect(statistics.storedBytes == onDisk.storedBytes)
            #expect(statistics.removedRecords == streams.count * rounds * oldPerBatch)
            #expect(onDisk.removedRecords == statistics.removedRecords)
            #expect(onDisk.removedBytes == statistics.removedBytes)
            let sources = try await store.sources()
            #expect(
                sources.map(\.records) == Array(repeating: rounds * (oldPerBatch + newPerBatch), count: streams.count))
            #expect(sources.first { $0.stream == streams[0] }?.lost == rounds)
        } teardown: {
            await store.close()
        }
    }

    /// The console stops while a transaction runs (retention's, or an ingest's): the close waits for it to end, and a
    /// write after the close fails with a sentence instead of SQLite's error on a closed connection.
    @Test func closeWaitsForTheTransactionUnderWayAndLaterWritesSayTheStoreIsClosed() async throws {
        let path = TestSupport.temporaryDirectory() + "/console.sqlite"
        let store = try await ConsoleStore.open(path: path)
        let (writer, gate) = await (store.writer, store.writerGate)
        let (entered, enteredContinuation) = AsyncStream.makeStream(of: Void.self)
        let (release, releaseContinuation) = AsyncStream.makeStream(of: Void.self)
        // A transaction under way: it holds the writer until released, then uses it.
        let transaction = Task {
            try await store.withWriter {
                enteredContinuation.yield()
                for await _ in release { break }
                return try await writer.query("SELECT count(*) AS n FROM records").first?.column("n")?.integer
            }
        }
        for await _ in entered { break }
        let closing = Task { await store.close() }
        // The close is queued behind the transaction (the gate's only waiter) rather than closing under it.
        while gate.waiting == 0 { await Task.yield() }
        releaseContinuation.yield()
        #expect(try await transaction.value == 0)
        await closing.value

        let record = LogRecord(
            sequence: 1, timestamp: Date(), level: .info, label: "app.main", message: "after the close",
            metadata: [:], appName: "orders", host: "alpha", processID: 42)
        do {
            _ = try await store.insert([record], from: Self.source("stream-a"))
            Issue.record("an insert after the close succeeded")
        } catch let error as ConsoleStoreError {
            #expect(error.description.contains("is closed"), "\(error)")
        }
    }
}
