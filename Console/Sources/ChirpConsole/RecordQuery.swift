import Foundation
import Logging
import SQLiteNIO

/// A request the API refuses, with the reason a user can act on (served as 400, or 401 for the token).
public struct ConsoleRequestError: Error, Equatable, CustomStringConvertible, Sendable {
    /// What was wrong, in a sentence.
    public var message: String
    /// The HTTP status: 400 or 401.
    public var status: Int

    /// A refused request.
    public init(_ message: String, status: Int = 400) {
        self.message = message
        self.status = status
    }

    public var description: String { message }
}

/// Which records a request wants: the filters of `/api/records`, `/api/stream` and `/api/endpoints` (Docs/Console.md),
/// parsed and checked once. Pure: the store turns it into SQL.
public struct RecordFilter: Sendable, Equatable {
    /// The app's name, exactly.
    public var app: String?
    /// The host, exactly.
    public var host: String?
    /// The process id.
    public var pid: Int32?
    /// The lowest level shown.
    public var minimumLevel: Logger.Level?
    /// The logger's label, exactly.
    public var label: String?
    /// Words that must all appear (full-text search over message, label, metadata and URL); the last one as a prefix.
    public var words: [String] = []
    /// Text that must appear as it is, letters compared without regard to ASCII case, in the message, label, metadata
    /// or URL: the search terms that join words with other characters (`items/7`, `card_declined`, `10.0.0.1`). Their
    /// words are in ``words`` too, so that the full-text index finds the candidates.
    public var phrases: [String] = []
    /// A regular expression the message must match (ICU syntax, as `NSRegularExpression`).
    public var regex: String?
    /// Records at or after this time.
    public var from: Date?
    /// Records at or before this time.
    public var to: Date?
    /// Only HTTP exchanges.
    public var onlyExchanges = false
    /// HTTP method, exactly (implies ``onlyExchanges``).
    public var method: String?
    /// HTTP URL path, exactly (implies ``onlyExchanges``).
    public var path: String?
    /// HTTP status: one code, a class (`2xx` ... `5xx`) or `failed` (no response) (implies ``onlyExchanges``).
    public var status: StatusFilter?

    /// A status filter.
    public enum StatusFilter: Sendable, Equatable {
        case code(Int)
        case range(ClosedRange<Int>)
        case failed
    }

    /// No filter: every record.
    public init() {}

    /// The longest regular expression accepted.
    static let maximumRegexLength = 512
    /// The most search words accepted.
    static let maximumWords = 16

    /// Parses the query parameters of a request.
    /// - Throws: ``ConsoleRequestError`` naming the parameter and what it accepts.
    public init(parameters: [String: String]) throws {
        func text(_ name: String) -> String? {
            guard let value = parameters[name]?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
            return value
        }
        app = text("app")
        host = text("host")
        label = text("label")
        if let value = text("pid") {
            guard let pid = Int32(value) else {
                throw ConsoleRequestError("pid: expected a process id, got \(Self.quote(value))")
            }
            self.pid = pid
        }
        if let value = text("level") {
            guard let level = LevelRank.parse(value) else {
                throw ConsoleRequestError(
                    "level: expected trace, debug, info, notice, warning, error or critical, got \(Self.quote(value))")
            }
            minimumLevel = level
        }
        if let value = text("q") {
            (words, phrases) = Self.search(value)
            guard words.count <= Self.maximumWords else {
                throw ConsoleRequestError("q: at most \(Self.maximumWords) words")
            }
        }
        if let value = text("regex") {
            guard value.count <= Self.maximumRegexLength else {
                throw ConsoleRequestError("regex: at most \(Self.maximumRegexLength) characters")
            }
            do {
                _ = try NSRegularExpression(pattern: value)
            } catch {
                throw ConsoleRequestError("regex: not a valid regular expression: \(Self.quote(value))")
            }
            regex = value
        }
        from = try text("from").map { try Self.time($0, parameter: "from") }
        to = try text("to").map { try Self.time($0, parameter: "to") }
        if let from, let to, from > to { throw ConsoleRequestError("from is after to") }
        if let value = text("http") {
            guard ["1", "true", "0", "false"].contains(value) else {
                throw ConsoleRequestError("http: expected 1 or 0")
            }
            onlyExchanges = value == "1" || value == "true"
        }
        method = text("method")?.uppercased()
        path = text("path")
        if let value = text("status")?.lowercased() {
            if value == "failed" {
                status = .failed
            } else if value.count == 3, value.hasSuffix("xx"), let digit = Int(value.prefix(1)), (1...5).contains(digit)
            {
                status = .range(digit * 100...digit * 100 + 99)
            } else if let code = Int(value), (100...599).contains(code) {
                status = .code(code)
            } else {
                throw ConsoleRequestError(
                    "status: expected a code (404), a class (5xx) or failed, got \(Self.quote(value))")
            }
        }
        if method != nil || path != nil || status != nil { onlyExchanges = true }
    }

    /// The words of a search, as the full-text index splits them (letters and digits).
    static func words(in text: String) -> [String] {
        text.split(whereSeparator: { !$0.isLetter && !$0.isNumber }).map(String.init)
    }

    /// A search box's text as words and phrases. Terms are separated by white space, and double quotes around a term
    /// are dropped. A term of letters and digits only is a word. A term that joins words with other characters
    /// (`items/7`) is a phrase: it must appear as it is (the index alone would find records holding `items` and any
    /// word starting with `7`, anywhere), and its words are words too. A term without a letter or digit is ignored.
    static func search(_ text: String) -> (words: [String], phrases: [String]) {
        var words: [String] = []
        var phrases: [String] = []
        for rawTerm in text.split(whereSeparator: \.isWhitespace) {
            let term = rawTerm.trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            let termWords = Self.words(in: term)
            guard !termWords.isEmpty else { continue }
            words += termWords
            if termWords != [term] { phrases.append(term) }
        }
        return (words, phrases)
    }

    private static func time(_ text: String, parameter: String) throws -> Date {
        let withFraction = ISO8601DateFormatter()
        withFraction.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = withFraction.date(from: text) ?? ISO8601DateFormatter().date(from: text) { return date }
        if let seconds = Double(text), seconds.isFinite { return Date(timeIntervalSince1970: seconds) }
        throw ConsoleRequestError("\(parameter): expected an ISO 8601 time (2026-11-25T07:00:00Z), got \(quote(text))")
    }

    /// A user's text in an error message: quoted, cut at 80 characters, control characters escaped.
    static func quote(_ text: String) -> String {
        let cut = text.count > 80 ? String(text.prefix(80)) + "…" : text
        let escaped = cut.unicodeScalars.map { scalar -> String in
            scalar.properties.generalCategory == .control ? "\\u{\(String(scalar.value, radix: 16))}" : String(scalar)
        }.joined()
        return "\"\(escaped)\""
    }

    /// The SQL of the filter: the full-text query (FTS5 syntax, or `nil`) and the other conditions on `records`
    /// (columns qualified, `1` when nothing filters) with their bound values. The store joins the full-text index when
    /// there is a query, walking it in id order so that a page stops at its limit (no full list of matches is built).
    func sql() -> (match: String?, condition: String, binds: [SQLiteData]) {
        var conditions: [String] = []
        var binds: [SQLiteData] = []
        if let app {
            conditions.append("records.app = ?")
            binds.append(.text(app))
        }
        if let host {
            conditions.append("records.host = ?")
            binds.append(.text(host))
        }
        if let pid {
            conditions.append("records.pid = ?")
            binds.append(.integer(Int(pid)))
        }
        if let minimumLevel, minimumLevel != .trace {
            conditions.append("records.level >= ?")
            binds.append(.integer(LevelRank.rank(minimumLevel)))
        }
        if let label {
            conditions.append("records.label = ?")
            binds.append(.text(label))
        }
        for phrase in phrases {
            // instr over lower(): SQLite's lower() folds ASCII letters only, on both sides alike.
            conditions.append(
                "(instr(lower(records.message), lower(?)) > 0 OR instr(lower(records.label), lower(?)) > 0"
                    + " OR instr(lower(records.metadata), lower(?)) > 0"
                    + " OR instr(lower(coalesce(records.url, '')), lower(?)) > 0)")
            binds += Array(repeating: .text(phrase), count: 4)
        }
        if let regex {
            conditions.append("chirp_regexp(?, records.message, ?)")
            binds.append(.text(regex))
            binds.append(.integer(RegexSQLFunction.deadline()))
        }
        if let from {
            conditions.append("records.time >= ?")
            binds.append(.float(from.timeIntervalSince1970))
        }
        if let to {
            conditions.append("records.time <= ?")
            binds.append(.float(to.timeIntervalSince1970))
        }
        if onlyExchanges { conditions.append("records.method IS NOT NULL") }
        if let method {
            conditions.append("records.method = ?")
            binds.append(.text(method))
        }
        if let path {
            conditions.append("records.path = ?")
            binds.append(.text(path))
        }
        switch status {
        case .code(let code):
            conditions.append("records.status = ?")
            binds.append(.integer(code))
        case .range(let range):
            conditions.append("records.status BETWEEN ? AND ?")
            binds.append(.integer(range.lowerBound))
            binds.append(.integer(range.upperBound))
        case .failed: conditions.append("records.status IS NULL")
        case nil: break
        }
        // Each word as an FTS5 string (double quotes doubled): the user's text is never FTS5 syntax. The last word
        // matches as a prefix, as a search box does while typing.
        let match =
            words.isEmpty
            ? nil
            : words.enumerated().map { index, word in
                "\"" + word.replacingOccurrences(of: "\"", with: "\"\"") + "\"" + (index == words.count - 1 ? "*" : "")
            }.joined(separator: " ")
        return (match, conditions.isEmpty ? "1" : conditions.joined(separator: " AND "), binds)
    }
}

/// Which page of records: the latest, the ones before an id (scrolling back), or the ones after an id (live).
public enum RecordPage: Sendable, Equatable {
    case latest
    case before(Int64)
    case after(Int64)

    /// The page size when the request gives none.
    public static let defaultLimit = 200
    /// The largest page.
    public static let maximumLimit = 1000

    /// Parses `before`, `after` and `limit`.
    static func parse(_ parameters: [String: String]) throws -> (RecordPage, Int) {
        var limit = defaultLimit
        if let value = parameters["limit"], !value.isEmpty {
            guard let number = Int(value), (1...maximumLimit).contains(number) else {
                throw ConsoleRequestError("limit: expected 1 to \(maximumLimit), got \(RecordFilter.quote(value))")
            }
            limit = number
        }
        let before = try parameters["before"].flatMap { $0.isEmpty ? nil : $0 }.map { try id($0, "before") }
        let after = try parameters["after"].flatMap { $0.isEmpty ? nil : $0 }.map { try id($0, "after") }
        switch (before, after) {
        case (nil, nil): return (.latest, limit)
        case (let before?, nil): return (.before(before), limit)
        case (nil, let after?): return (.after(after), limit)
        case (.some, .some): throw ConsoleRequestError("before and after: give one of them")
        }
    }

    private static func id(_ text: String, _ name: String) throws -> Int64 {
        guard let id = Int64(text), id >= 0 else {
            throw ConsoleRequestError("\(name): expected a record id, got \(RecordFilter.quote(text))")
        }
        return id
    }
}
