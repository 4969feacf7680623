import Chirp
import ChirpSupport
import Foundation

/// JSON as `chirp` reads and prints it: payloads are checked before anything is sent, and printed one object per line.
enum JSONText {
    /// The largest payload `chirp send` accepts (Chirp's default ``Configuration/maximumMessageSize``).
    static let maximumPayloadSize = 64 * 1024 * 1024

    /// `text` as a payload, if it is one valid JSON value as RFC 8259 defines it (surrounding whitespace removed).
    /// - Throws: ``CLIError`` with ``ExitStatus/badInput``, saying what is wrong and where.
    static func payload(_ data: Data, source: String) throws -> Data {
        guard data.count <= maximumPayloadSize else {
            throw CLIError.badInput(
                "the JSON from \(source) is \(data.count) bytes; at most \(maximumPayloadSize) are sent")
        }
        let trimmed = trimmingWhitespace(data)
        guard !trimmed.isEmpty else {
            throw CLIError.badInput(
                "the JSON from \(source) is empty; nothing was sent",
                hint: "give one JSON value, e.g. '{\"text\":\"hi\"}'")
        }
        do {
            // RFC 8259, strictly: Foundation's parser takes a trailing comma, for one (see `StrictJSON`).
            try StrictJSON.check(Array(trimmed))
        } catch {
            throw CLIError.badInput(
                "invalid JSON from \(source): \(error); nothing was sent",
                hint: "give one JSON value, e.g. '{\"text\":\"hi\"}' (single quotes keep the shell away from it)")
        }
        return trimmed
    }

    /// The parsed value of a payload, or `nil` when it is not JSON.
    static func value(of payload: Data) -> Any? {
        try? JSONSerialization.jsonObject(with: payload, options: [.fragmentsAllowed])
    }

    /// A payload on one line: compact JSON when it is JSON, else a short description of its bytes.
    static func compact(_ payload: Data, isBinary: Bool) -> String {
        if !isBinary, let value = value(of: payload), let text = serialize(value) { return text }
        return
            "<\(payload.count) bytes: \(payload.prefix(32).map { String(format: "%02x", $0) }.joined())\(payload.count > 32 ? "..." : "")>"
    }

    /// The JSON form of a payload inside a JSON line: the value itself, or `{"base64": ...}` when it is not JSON.
    static func embeddable(_ payload: Data, isBinary: Bool) -> Any {
        if !isBinary, let value = value(of: payload) { return value }
        return ["base64": payload.base64EncodedString()]
    }

    /// One JSON object on one line, keys sorted.
    static func line(_ object: [String: Any]) -> String {
        serialize(object) ?? "{}"
    }

    private static func serialize(_ value: Any) -> String? {
        guard
            let data = try? JSONSerialization.data(
                withJSONObject: value, options: [.sortedKeys, .withoutEscapingSlashes, .fragmentsAllowed])
        else { return nil }
        let text = String(decoding: data, as: UTF8.self)
        // JSONSerialization escapes C0 controls only; DEL, C1 controls, U+2028/2029 and bidi overrides from a peer
        // are escaped as \uXXXX too, so that the line is valid JSON that cannot drive a terminal (Docs/CLI.md).
        guard text.unicodeScalars.contains(where: UntrustedText.needsEscape) else { return text }
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count + 16)
        for scalar in text.unicodeScalars {
            if UntrustedText.needsEscape(scalar) {
                escaped +=
                    "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count)
                    + String(scalar.value, radix: 16)
            } else {
                escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }

    private static func trimmingWhitespace(_ data: Data) -> Data {
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
        guard let start = data.firstIndex(where: { !isSpace($0) }), let end = data.lastIndex(where: { !isSpace($0) })
        else {
            return Data()
        }
        return Data(data[start...end])
    }

    /// An ISO 8601 timestamp with milliseconds, in UTC.
    static func timestamp(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }

    /// `HH:mm:ss.SSS` in local time, for text output.
    static func clockTime(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "HH:mm:ss.SSS"
        return formatter.string(from: date)
    }
}
