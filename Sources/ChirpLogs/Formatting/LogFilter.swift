import Logging

/// Which records a viewer shows: a minimum level, labels, a regular expression, HTTP exchanges only.
///
/// ```swift
/// var filter = LogFilter()
/// filter.minimumLevel = .warning
/// filter.labels = ["orders.*"]
/// filter.pattern = try LogPattern("timeout|refused")
/// let shown = records.filter(filter.admits)
/// ```
package struct LogFilter: Sendable {
    /// Records below this level are hidden. Default: `nil` (all levels).
    package var minimumLevel: Logger.Level?
    /// Records whose label matches none of these are hidden; `*` matches any run of characters. Default: empty (all).
    package var labels: [String] = []
    /// Records in which this finds no match (in the message, metadata values or the HTTP URL) are hidden.
    package var pattern: LogPattern?
    /// Only records that carry an HTTP exchange. Default: `false`.
    package var httpOnly = false

    /// A filter that admits everything.
    package init() {}

    /// Whether `record` is shown.
    package func admits(_ record: LogRecord) -> Bool {
        if let minimumLevel, record.level < minimumLevel { return false }
        if httpOnly && record.http == nil { return false }
        if !labels.isEmpty && !labels.contains(where: { Self.glob($0, matches: record.label) }) { return false }
        if let pattern, !pattern.matches(record) { return false }
        return true
    }

    /// Whether `pattern` (with `*` wildcards) matches the whole of `text`.
    package static func glob(_ pattern: String, matches text: String) -> Bool {
        guard pattern.contains("*") else { return pattern == text }
        let parts = pattern.split(separator: "*", omittingEmptySubsequences: false).map(String.init)
        var rest = Substring(text)
        for (index, part) in parts.enumerated() {
            if index == 0 {
                guard rest.hasPrefix(part) else { return false }
                rest = rest.dropFirst(part.count)
            } else if index == parts.count - 1 {
                return part.isEmpty || rest.hasSuffix(part)
            } else if !part.isEmpty {
                guard let range = rest.range(of: part) else { return false }
                rest = rest[range.upperBound...]
            }
        }
        return rest.isEmpty
    }
}

/// A regular expression searched in records (`chirp logs --grep`), with the ranges it matched for highlighting.
package struct LogPattern: @unchecked Sendable {
    // @unchecked: `Regex` is a value whose matching does not mutate shared state.
    /// The expression as given.
    package let source: String
    private let regex: Regex<AnyRegexOutput>

    /// Compiles `source` (Swift regex syntax, which accepts the common PCRE/ICU forms).
    /// - Throws: when it is not a valid expression; the error says where.
    package init(_ source: String) throws {
        self.source = source
        self.regex = try Regex(source)
    }

    /// Whether the expression matches in `text`.
    package func matches(_ text: String) -> Bool {
        (try? regex.firstMatch(in: text)) != nil
    }

    /// Whether the expression matches the record's message, a metadata value or key, or its HTTP URL.
    package func matches(_ record: LogRecord) -> Bool {
        if matches(record.message) { return true }
        if let http = record.http, matches(http.url) || matches(http.method) { return true }
        for (key, value) in record.metadata where matches(key) || matches(value.description) { return true }
        return false
    }

    /// The non-empty ranges where the expression matches in `text`.
    package func ranges(in text: String) -> [Range<String.Index>] {
        text.matches(of: regex).map(\.range).filter { !$0.isEmpty }
    }
}
