import Chirp
import ChirpLogs
import ChirpTestSupport
import Foundation
import Logging
import SQLiteNIO
import Testing

@testable import ChirpConsole

/// The store's versions (`PRAGMA user_version`): a store made before the migrations (version 0, without the
/// sources' fingerprint) opens, is migrated once, keeps what it held, and stores fingerprints; a store of a later
/// version is refused with its name.
@Suite(.timeLimit(.minutes(2))) struct ConsoleStoreMigrationTests {
    static let source = LogSourceInfo(
        appName: "orders", host: "alpha", processID: 42, streamID: "stream-a", peerID: "p1")

    /// A store file as the consoles before the migrations made it: the tables of version 0, a source with records.
    static func makeVersionZeroStore() async throws -> String {
        let path = TestSupport.temporaryDirectory() + "/console.sqlite"
        let connection = try await SQLiteConnection.open(storage: .file(path: path))
        do {
            for statement in ConsoleStore.Schema.statements { _ = try await connection.query(statement) }
            _ = try await connection.query(
                """
                INSERT INTO sources(stream, app, host, pid, first_seen, last_seen, last_sequence, records)
                VALUES ('stream-a', 'orders', 'alpha', 42, 1800000000, 1800000000, 7, 7)
                """)
            #expect(try await ConsoleStore.Schema.version(of: connection) == 0)
            let columns = try await connection.query("PRAGMA table_info(sources)").compactMap {
                $0.column("name")?.string
            }
            #expect(!columns.contains("fingerprint"), "version 0 has no fingerprint column: \(columns)")
        } catch {
            try? await connection.close()
            throw error
        }
        try await connection.close()
        return path
    }

    static func version(of path: String) async throws -> Int {
        let connection = try await SQLiteConnection.open(storage: .file(path: path))
        let version = try await ConsoleStore.Schema.version(of: connection)
        try await connection.close()
        return version
    }

    @Test func aStoreOfVersionZeroIsMigratedAndKeepsWhatItHeld() async throws {
        let path = try await Self.makeVersionZeroStore()
        let fingerprint = try Fingerprint(
            parsing: "chirp:4oym-iquy-7qob-jgx3-6tej-s35z-eqt2-4qpe-msnz-gtfe-swmr-w6cs-xbkq-l")

        let store = try await ConsoleStore.open(path: path)
        try await withTeardown {
            let before = try #require(try await store.sources().first)
            #expect(before.stream == "stream-a" && before.records == 7 && before.lastSequence == 7)
            #expect(before.fingerprint == nil)
            #expect(try await store.positions() == ["stream-a": 7])
            try await store.noteFingerprint(fingerprint, of: Self.source)
            let after = try #require(try await store.sources().first)
            #expect(after.fingerprint == fingerprint)
            #expect(after.records == 7 && after.lastSequence == 7, "the fingerprint changes nothing else")
        } teardown: {
            await store.close()
        }
        #expect(try await Self.version(of: path) == ConsoleStore.Schema.version)
        #expect(ConsoleStore.Schema.version >= 1)

        // Opened again: nothing to migrate, and the fingerprint is still there.
        let reopened = try await ConsoleStore.open(path: path)
        try await withTeardown {
            let sources = try await reopened.sources()
            #expect(sources.first?.fingerprint == fingerprint)
        } teardown: {
            await reopened.close()
        }
        #expect(try await Self.version(of: path) == ConsoleStore.Schema.version)
    }

    @Test func aNewStoreIsAtTheLatestVersionAndAFingerprintNotedLaterReplacesTheFirst() async throws {
        let path = TestSupport.temporaryDirectory() + "/console.sqlite"
        let first = try Fingerprint(parsing: "chirp:4oym-iquy-7qob-jgx3-6tej-s35z-eqt2-4qpe-msnz-gtfe-swmr-w6cs-xbkq-l")
        let second = Fingerprint(spki: Array("another key".utf8))
        let store = try await ConsoleStore.open(path: path)
        try await withTeardown {
            // A source known only by its fingerprint (it refused the console): listed, without records.
            try await store.noteFingerprint(first, of: Self.source)
            let listed = try #require(try await store.sources().first)
            #expect(listed.fingerprint == first && listed.records == 0 && listed.app == "orders")
            #expect(try await store.positions().isEmpty, "no position for a stream without records")
            // Its records later keep the fingerprint; a new identity replaces it.
            try await store.insert([ConsoleStoreTests.record(1)], from: Self.source)
            #expect(try await store.sources().first?.fingerprint == first)
            try await store.noteFingerprint(second, of: Self.source)
            #expect(try await store.sources().map(\.fingerprint) == [second])
        } teardown: {
            await store.close()
        }
        #expect(try await Self.version(of: path) == ConsoleStore.Schema.version)
    }

    @Test func aStoreOfALaterVersionIsRefusedWithItsName() async throws {
        let path = try await Self.makeVersionZeroStore()
        let connection = try await SQLiteConnection.open(storage: .file(path: path))
        _ = try await connection.query("PRAGMA user_version = \(ConsoleStore.Schema.version + 1)")
        try await connection.close()
        await #expect {
            // Opened after all (the check broken): closed, so that the failure is this expectation, not a crash.
            let store = try await ConsoleStore.open(path: path)
            await store.close()
        } throws: { error in
            "\(error)".contains(path) && "\(error)".contains("newer chirp-console")
        }
    }
}
