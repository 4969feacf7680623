import Foundation
import Logging
import NIOConcurrencyHelpers
import SQLiteNIO

/// The console's store: one SQLite file in WAL mode, with a full-text index (FTS5) over messages, labels, metadata and
/// URLs. Writes go through this actor, one transaction per batch of records and one transaction at a time (ingest,
/// retention and loss notices wait their turn at the store's write gate); reads use a second connection, so a search
/// never waits for an ingest (WAL lets readers and a writer work at once).
///
/// Each record is stored exactly once: `(stream, sequence)` is unique and inserts skip what is already there, and
/// ``positions()`` tells the collector where each stream continues after a restart.
///
/// Its jobs, a file each: opening and closing (here), the tables (`ConsoleStore+Schema.swift`), storing records
/// (`ConsoleStore+Ingest.swift`), retention (`ConsoleStore+Retention.swift`), the reader's queries
/// (`ConsoleStore+Queries.swift`) and the regular expressions of a search (`RegexSQLFunction.swift`).
public actor ConsoleStore {
    /// The file.
    public nonisolated let path: String
    /// The one connection that writes: ingest and retention. Once the store is open, used only in ``withWriter(_:)``.
    let writer: SQLiteConnection
    /// One user of the writer at a time (``withWriter(_:)``).
    let writerGate = FIFOGate()
    /// The connection of the queries (`PRAGMA query_only`).
    nonisolated let reader: SQLiteConnection
    let retention: ConsoleRetention
    /// Bytes stored and what retention removed: ingest adds, retention removes (`ConsoleStore+Retention.swift`).
    var usage = StoreUsage()
    /// The highest record id stored: set by ingest, read by the queries without waiting for the actor.
    nonisolated let highestID = NIOLockedValueBox<Int64>(0)
    /// The last sequence number stored per stream, as far as this process wrote or read it (ingest's cache).
    var lastSequences: [String: UInt64] = [:]
    /// ``close()`` was called: a second call returns at once.
    private var isClosing = false
    /// Both connections are closed: ``withWriter(_:)`` throws.
    private var isClosed = false

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
            try await Schema.create(on: writer)
            let reader = try await SQLiteConnection.open(storage: .file(path: path), logger: logger)
            try await Schema.prepareReader(reader)
            let store = ConsoleStore(path: path, writer: writer, reader: reader, retention: retention)
            try await store.loadState()
            return store
        } catch {
            try? await writer.close()
            throw ConsoleStoreError("cannot prepare the store \(path): \(error)")
        }
    }

    /// Closes both connections, once the transaction under way (an ingest's or retention's) and those already
    /// waiting for the writer have ended: closing the writer under one would fail it halfway. Every later use of the
    /// writer throws ``ConsoleStoreError`` ("the store is closed"). Also when the calling task is cancelled: the wait
    /// and SQLiteNIO's close (which refuses to run in a cancelled task) run in a task of their own.
    public func close() async {
        guard !isClosing else { return }
        isClosing = true
        let (reader, writer, gate) = (self.reader, self.writer, self.writerGate)
        await Task.detached {
            // A task of its own is never cancelled, so its turn comes: `enter()` throws only on cancellation.
            try? await gate.enter()
            try? await reader.close()
            try? await writer.close()
        }.value
        isClosed = true
        // Those queued behind the close go through one by one, and each finds the store closed.
        writerGate.leave()
    }

    /// Runs `body`, which uses ``writer``, once every call that came before has finished with it; the next waits until
    /// `body` returned or threw. The actor alone does not serialise them: while one call awaits SQLite another may
    /// run, and two transactions on one connection would mix (one's BEGIN fails inside the other, one's ROLLBACK
    /// undoes the other's statements). What `body` changes in the actor's state after its COMMIT is done before the
    /// next transaction starts.
    /// - Throws: `CancellationError` when the task is cancelled while it waits (`body` did not run),
    ///   ``ConsoleStoreError`` when the store is closed (`body` did not run), or what `body` throws.
    func withWriter<T>(_ body: () async throws -> T) async throws -> T {
        try await writerGate.enter()
        defer { writerGate.leave() }
        guard !isClosed else { throw ConsoleStoreError("the store \(path) is closed") }
        return try await body()
    }

    /// Reads what the actor keeps of an existing file: retention's counters, the highest id and the bytes stored.
    private func loadState() async throws {
        usage = try await StoreUsage.load(from: writer)
        let highest =
            try await writer.query("SELECT coalesce(max(id), 0) AS id FROM records").first?.column("id")?.integer ?? 0
        highestID.withLockedValue { $0 = Int64(highest) }
    }
}

/// The store could not be opened or written; the message names the file.
public struct ConsoleStoreError: Error, CustomStringConvertible, Sendable {
    public var description: String
    init(_ description: String) { self.description = description }
}
