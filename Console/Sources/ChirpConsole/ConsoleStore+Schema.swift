import SQLiteNIO

extension ConsoleStore {
    /// The store's tables, indexes and triggers, and the settings of its two connections. Every statement can run on
    /// a store that has them already (`IF NOT EXISTS`): opening a file creates what it lacks, then ``migrations``
    /// bring it to ``version``.
    ///
    /// The tables of ``statements`` are version 0, as the first stores had them: they never change. A change to a
    /// table is a new migration at the end of ``migrations``, so that a new store and an old one reach the same
    /// tables by the same statements.
    enum Schema {
        /// The writer's settings and the tables of version 0, in order.
        static let statements = [
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
                message TEXT NOT NULL, metadata TEXT NOT NULL, app TEXT NOT NULL, host TEXT NOT NULL,
                pid INTEGER NOT NULL, file TEXT NOT NULL, function TEXT NOT NULL, line INTEGER NOT NULL, method TEXT,
                url TEXT, urlhost TEXT, path TEXT, status INTEGER, duration REAL, http TEXT, size INTEGER NOT NULL,
                UNIQUE(stream, sequence))
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

        /// The changes after version 0, in order: migration `n` (from 0) takes a store from version `n` to `n + 1`.
        /// A store's version is SQLite's `PRAGMA user_version`, which was 0 in the stores made before migrations.
        static let migrations: [[String]] = [
            // 1: the device fingerprint of a source that uses a device identity (its readable form), as the console
            // last saw it advertised; NULL for open sources and those with a shared secret.
            ["ALTER TABLE sources ADD COLUMN fingerprint TEXT"]
        ]

        /// The version this console's tables are at: the number of ``migrations``.
        static var version: Int { migrations.count }

        /// Sets up the writer, creates what the file lacks and migrates it to ``version``.
        /// - Throws: ``ConsoleStoreError`` when the file is of a later version (a newer console made it), or what
        ///   SQLite threw.
        static func create(on writer: SQLiteConnection) async throws {
            for statement in statements { _ = try await writer.query(statement) }
            try await migrate(writer)
        }

        /// The store's version (`PRAGMA user_version`).
        static func version(of connection: SQLiteConnection) async throws -> Int {
            try await connection.query("PRAGMA user_version").first?.column("user_version")?.integer ?? 0
        }

        /// Runs the migrations the file has not had, each in a transaction of its own with the version it reaches:
        /// a migration interrupted (a crash, a full disk) leaves the store at the version before it, and the next
        /// open runs it again.
        static func migrate(_ writer: SQLiteConnection) async throws {
            let current = try await version(of: writer)
            guard current <= version else {
                throw ConsoleStoreError(
                    "the store is of version \(current), made by a newer chirp-console (this one reads up to version "
                        + "\(version))")
            }
            for (index, migration) in migrations.enumerated() where index >= current {
                _ = try await writer.query("BEGIN IMMEDIATE")
                do {
                    for statement in migration { _ = try await writer.query(statement) }
                    // PRAGMA takes no bound value; the number is ours.
                    _ = try await writer.query("PRAGMA user_version = \(index + 1)")
                    _ = try await writer.query("COMMIT")
                } catch {
                    _ = try? await writer.query("ROLLBACK")
                    throw error
                }
            }
        }

        /// Makes `reader` read only, with the writer's page cache and the search's regular expressions.
        static func prepareReader(_ reader: SQLiteConnection) async throws {
            _ = try await reader.query("PRAGMA query_only = 1")
            _ = try await reader.query("PRAGMA cache_size = -65536")
            try await reader.install(customFunction: RegexSQLFunction.make())
        }
    }
}
