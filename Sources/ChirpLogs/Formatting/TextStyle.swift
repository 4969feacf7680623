import ChirpSupport
import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// ANSI styles used by the formatters; every piece of text is written through ``TextStyle/apply(_:to:)`` so that
/// turning colours off yields plain text.
package enum TextStyle: Sendable {
    /// No styling.
    case plain
    /// Faint (trace and debug records, timestamps, notices).
    case dim
    /// Bold (level names, header names).
    case bold
    /// Yellow (warnings).
    case yellow
    /// Red (errors, failed exchanges).
    case red
    /// Bold red (critical records).
    case boldRed
    /// Green (successful exchanges).
    case green
    /// Cyan (requests, sources).
    case cyan
    /// Magenta (redacted values).
    case magenta
    /// Highlighted match (reverse video, so it shows whatever colour surrounds it).
    case highlight

    /// The escape sequence that starts the style.
    var start: String {
        switch self {
        case .plain: return ""
        case .dim: return "\u{1B}[2m"
        case .bold: return "\u{1B}[1m"
        case .yellow: return "\u{1B}[33m"
        case .red: return "\u{1B}[31m"
        case .boldRed: return "\u{1B}[1;31m"
        case .green: return "\u{1B}[32m"
        case .cyan: return "\u{1B}[36m"
        case .magenta: return "\u{1B}[35m"
        case .highlight: return "\u{1B}[7m"
        }
    }

    /// The escape sequence that ends it.
    var end: String {
        switch self {
        case .plain: return ""
        case .highlight: return "\u{1B}[27m"
        default: return "\u{1B}[0m"
        }
    }

    /// The style of a record's level: trace and debug dim, warning yellow, error red, critical bold red.
    package static func of(_ level: Logger.Level) -> TextStyle {
        switch level {
        case .trace, .debug: return .dim
        case .info, .notice: return .plain
        case .warning: return .yellow
        case .error: return .red
        case .critical: return .boldRed
        }
    }

    /// The style of an HTTP exchange's outcome: green success, red failure.
    package static func of(_ outcome: HTTPExchange.Outcome) -> TextStyle {
        outcome == .success ? .green : .red
    }

    /// Strips ANSI escape sequences (for tests and width computations).
    package static func strip(_ text: String) -> String {
        var result = ""
        var iterator = text.unicodeScalars.makeIterator()
        while let scalar = iterator.next() {
            if scalar == "\u{1B}" {
                while let next = iterator.next(), !(next.properties.isAlphabetic) {}
                continue
            }
            result.unicodeScalars.append(scalar)
        }
        return result
    }
}

/// Whether to colour: `--color auto` colours only a terminal, and never when `NO_COLOR` is set (https://no-color.org).
package enum ColorChoice: String, Sendable, CaseIterable {
    /// Colour when standard output is a terminal and `NO_COLOR` is not set.
    case auto
    /// Always colour.
    case always
    /// Never colour.
    case never

    /// The decision for this process's standard output.
    package func resolved(
        environment: [String: String] = ProcessInfo.processInfo.environment,
        isTerminal: Bool = isatty(STDOUT_FILENO) == 1
    ) -> Bool {
        switch self {
        case .always: return true
        case .never: return false
        case .auto:
            if let noColor = environment["NO_COLOR"], !noColor.isEmpty { return false }
            return isTerminal
        }
    }
}

/// Text with styles, built piece by piece and rendered with or without colours.
///
/// Every piece is what a remote app logged (its message, label, metadata, URL, names): its control characters are
/// escaped as it is appended (``UntrustedText``), so a record cannot forge a line or drive the terminal. A piece that
/// is exactly `"\n"` is the formatter's own line break; `keepingNewlines` keeps the line breaks of a pretty-printed body.
struct StyledText {
    var useColor: Bool
    private(set) var text = ""

    init(useColor: Bool) { self.useColor = useColor }

    mutating func append(_ piece: String, _ style: TextStyle = .plain, keepingNewlines: Bool = false) {
        let piece = piece == "\n" ? piece : UntrustedText.escaped(piece, keepingNewlines: keepingNewlines)
        guard useColor, style != .plain, !piece.isEmpty else {
            text += piece
            return
        }
        text += style.start + piece + style.end
    }

    /// Appends `piece` in `style`, with the ranges `pattern` matches highlighted.
    mutating func append(
        _ piece: String, _ style: TextStyle, highlighting pattern: LogPattern?, keepingNewlines: Bool = false
    ) {
        let piece = piece == "\n" ? piece : UntrustedText.escaped(piece, keepingNewlines: keepingNewlines)
        guard let pattern, useColor else {
            append(piece, style, keepingNewlines: keepingNewlines)
            return
        }
        let ranges = pattern.ranges(in: piece)
        guard !ranges.isEmpty else {
            append(piece, style)
            return
        }
        var position = piece.startIndex
        for range in ranges {
            append(String(piece[position..<range.lowerBound]), style, keepingNewlines: keepingNewlines)
            text += TextStyle.highlight.start + style.start + String(piece[range]) + TextStyle.highlight.end
            if style != .plain { text += style.end }
            position = range.upperBound
        }
        append(String(piece[position...]), style, keepingNewlines: keepingNewlines)
    }

    /// Appends `piece` as the next field of a line: after a space, unless it is the first.
    mutating func field(_ piece: String, _ style: TextStyle = .plain) {
        if !text.isEmpty { append(" ") }
        append(piece, style)
    }

    /// Appends `piece` as the next field of a line, with the ranges `pattern` matches highlighted.
    mutating func field(_ piece: String, _ style: TextStyle, highlighting pattern: LogPattern?) {
        if !text.isEmpty { append(" ") }
        append(piece, style, highlighting: pattern)
    }
}

/// Wall-clock formatting without `DateFormatter` (fast, and the same on every platform).
package enum LogTime {
    /// `HH:mm:ss.SSS` in local time.
    package static func clock(_ date: Date) -> String {
        let (parts, millis) = components(date, utc: false)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(12)
        appendClock(parts, millis, &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `yyyy-MM-ddTHH:mm:ss.SSSZ` in UTC.
    package static func iso8601(_ date: Date) -> String {
        let (parts, millis) = components(date, utc: true)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24)
        append(parts.tm_year + 1900, 4, &bytes)
        bytes.append(UInt8(ascii: "-"))
        append(parts.tm_mon + 1, 2, &bytes)
        bytes.append(UInt8(ascii: "-"))
        append(parts.tm_mday, 2, &bytes)
        bytes.append(UInt8(ascii: "T"))
        appendClock(parts, millis, &bytes)
        bytes.append(UInt8(ascii: "Z"))
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends `HH:mm:ss.SSS`.
    private static func appendClock(_ parts: tm, _ millis: Int32, _ bytes: inout [UInt8]) {
        append(parts.tm_hour, 2, &bytes)
        bytes.append(UInt8(ascii: ":"))
        append(parts.tm_min, 2, &bytes)
        bytes.append(UInt8(ascii: ":"))
        append(parts.tm_sec, 2, &bytes)
        bytes.append(UInt8(ascii: "."))
        append(millis, 3, &bytes)
    }

    /// Appends `value` as exactly `digits` decimal digits (zero-padded).
    private static func append(_ value: Int32, _ digits: Int, _ bytes: inout [UInt8]) {
        var value = max(0, value)
        var reversed: [UInt8] = []
        for _ in 0..<digits {
            reversed.append(UInt8(ascii: "0") + UInt8(value % 10))
            value /= 10
        }
        bytes.append(contentsOf: reversed.reversed())
    }

    private static func components(_ date: Date, utc: Bool) -> (tm, Int32) {
        let interval = date.timeIntervalSince1970
        var seconds = time_t(interval.rounded(.down))
        var millis = Int32(((interval - Double(seconds)) * 1000).rounded(.down))
        if millis >= 1000 {
            millis = 999
        } else if millis < 0 {
            millis = 0
        }
        var parts = tm()
        if utc { gmtime_r(&seconds, &parts) } else { localtime_r(&seconds, &parts) }
        return (parts, millis)
    }
}
