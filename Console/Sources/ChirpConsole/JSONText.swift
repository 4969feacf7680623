import Foundation

/// Writes JSON text by hand for the store's hot path (metadata of every record ingested): Foundation's
/// `JSONEncoder` costs a few microseconds per small object, which at 100,000 records a second is a core.
enum JSONText {
    /// `value` as compact JSON with sorted keys.
    static func string(_ value: JSONValue) -> String {
        var out = ""
        out.reserveCapacity(64)
        write(value, into: &out)
        return out
    }

    static func write(_ value: JSONValue, into out: inout String) {
        switch value {
        case .string(let text): writeString(text, into: &out)
        case .number(let number):
            out +=
                number.isFinite
                ? (number.rounded() == number && abs(number) < 1e15 ? String(Int64(number)) : String(number)) : "null"
        case .bool(let flag): out += flag ? "true" : "false"
        case .null: out += "null"
        case .array(let values):
            out += "["
            for (index, element) in values.enumerated() {
                if index > 0 { out += "," }
                write(element, into: &out)
            }
            out += "]"
        case .object(let entries):
            out += "{"
            for (index, key) in entries.keys.sorted().enumerated() {
                if index > 0 { out += "," }
                writeString(key, into: &out)
                out += ":"
                write(entries[key] ?? .null, into: &out)
            }
            out += "}"
        }
    }

    /// A JSON string: quotes, backslashes and control characters escaped, and U+2028/2029 too (for a `<script>`-free
    /// page they are harmless, but JSON consumers in JavaScript engines of old treat them as line ends).
    static func writeString(_ text: String, into out: inout String) {
        out += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{2028}": out += "\\u2028"
            case "\u{2029}": out += "\\u2029"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    out +=
                        "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count)
                        + String(scalar.value, radix: 16)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
    }
}
