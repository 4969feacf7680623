import SQLiteNIO

extension ConsoleStore {
    /// The store's tables, indexes and triggers, and the settings of its two connections. Every statement can run on
    /// a store that has them already (`IF NOT EXISTS`): opening a file creates what it lacks.
    enum Schema {
        /// The writer's settings and the tables, in order.
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

        /// Sets up the writer and creates what the file lacks.
        static func create(on writer: SQLiteConnection) async throws {
            for statement in statements { _ = try await writer.query(statement) }
        }

        /// Makes `reader` read only, with the writer's page cache and the search's regular expressions.
        static func prepareReader(_ reader: SQLiteConnection) async throws {
            _ = try await reader.query("PRAGMA query_only = 1")
            _ = try await reader.query("PRAGMA cache_size = -65536")
            try await reader.install(customFunction: RegexSQLFunction.make())
        }
    }
}
