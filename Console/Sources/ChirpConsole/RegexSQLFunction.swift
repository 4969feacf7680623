import Foundation
import NIOConcurrencyHelpers
import NIOCore
import SQLiteNIO

/// `chirp_regexp(pattern, text, deadline)`: SQLite has no regular expressions of its own. Patterns are compiled once
/// and kept (at most 64; they were checked when the request was parsed).
///
/// A search has a time budget (``budget``): an expression that backtracks without end (`(a+)+$` over a long run of
/// `a`) would otherwise hold the store's one reader connection, and every other page's requests with it. `deadline`
/// (`DispatchTime` uptime nanoseconds, from ``deadline()``) is bound by the query; a call after it, or a match that
/// runs past it, fails the query with ``TimedOut``, which the store turns into a request error.
enum RegexSQLFunction {
    /// The function's name in SQL.
    static let name = "chirp_regexp"

    private static let cache = NIOLockedValueBox<[String: NSRegularExpression]>([:])
    /// The most compiled patterns kept.
    static let cacheLimit = 64

    /// How long one query's regular expression may run, over all the records it looks at.
    static let budget: Duration = .seconds(2)

    /// The search ran out of its ``budget``.
    struct TimedOut: Error, CustomStringConvertible {
        static let marker = "chirp_regexp: time budget exceeded"
        var description: String { Self.marker }
    }

    /// The deadline to bind for a query that starts now.
    static func deadline() -> Int {
        Int(clamping: now() + UInt64(TimeAmount(budget).nanoseconds))
    }

    /// Whether `error`, from a query, is a search that ran out of its budget: SQLiteNIO fails the query with the
    /// description of what the function threw as its message (the error itself does not cross SQLite).
    static func timedOut(_ error: any Error) -> Bool {
        (error as? SQLiteError)?.message == TimedOut.marker
    }

    /// The function, to install on a connection.
    static func make() -> SQLiteCustomFunction {
        // Not `pure`: the answer depends on the time, through the deadline.
        SQLiteCustomFunction(name, argumentCount: 3) { arguments in
            guard let pattern = arguments[0].string, let text = arguments[1].string,
                let deadline = arguments[2].integer.map({ UInt64(clamping: $0) })
            else { return false }
            guard let regex = compiled(pattern) else { return false }
            return try matches(regex, in: text, deadline: deadline)
        }
    }

    /// Whether `regex` matches somewhere in `text`.
    /// - Throws: ``TimedOut`` when called at or after `deadline` (uptime nanoseconds, as `clock` tells them), or when
    ///   the match runs past it.
    static func matches(
        _ regex: NSRegularExpression, in text: String, deadline: UInt64,
        clock: @escaping () -> UInt64 = RegexSQLFunction.now
    ) throws -> Bool {
        guard clock() < deadline else { throw TimedOut() }
        var found = false
        var late = false
        // `.reportProgress` calls back during a long match, so that a runaway one can be stopped.
        regex.enumerateMatches(
            in: text, options: [.reportProgress], range: NSRange(text.startIndex..., in: text)
        ) { match, _, stop in
            if match != nil {
                found = true
                stop.pointee = true
            } else if clock() >= deadline {
                late = true
                stop.pointee = true
            }
        }
        if late && !found { throw TimedOut() }
        return found
    }

    /// `pattern` compiled, from the cache when it was compiled before; `nil` when it is not a regular expression.
    static func compiled(_ pattern: String) -> NSRegularExpression? {
        if let regex = cache.withLockedValue({ $0[pattern] }) { return regex }
        guard let regex = try? NSRegularExpression(pattern: pattern) else { return nil }
        cache.withLockedValue { cache in
            if cache.count >= cacheLimit { cache.removeAll() }
            cache[pattern] = regex
        }
        return regex
    }

    /// Uptime nanoseconds: the clock of the deadlines.
    static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }
}
