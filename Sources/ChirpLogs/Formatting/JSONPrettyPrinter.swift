/// Re-indents JSON text for people: keys keep their order, numbers their spelling, and `\uXXXX` escapes of printable
/// non-ASCII characters become the characters themselves (`"Zo\u00eb"` shows as `"Zoë"`). Anything that is not one
/// valid JSON value gives `nil`, so callers can fall back to plain text; so does a value whose indentation would make
/// it more than ``maximumGrowth`` times its size (deep nesting of many small values: a peer's body must not make a
/// viewer print gigabytes).
///
/// ```swift
/// JSONPrettyPrinter.format(#"{"name":"Zo\u00eb","tags":["a","b"]}"#)
/// // {
/// //   "name": "Zoë",
/// //   "tags": ["a", "b"]
/// // }
/// ```
package enum JSONPrettyPrinter {
    /// The most nesting accepted before giving up (and returning `nil`).
    package static let maximumDepth = 256
    /// How many times its input the output may grow (plus 4 KiB), before giving up (and returning `nil`).
    package static let maximumGrowth = 8

    /// Pretty-printed `text`, or `nil` if it is not valid JSON.
    package static func format(_ text: String, indent: String = "  ") -> String? {
        format(Array(text.utf8), indent: indent)
    }

    /// Pretty-printed UTF-8 `bytes`, or `nil` if they are not valid JSON.
    package static func format<Bytes: Collection>(_ bytes: Bytes, indent: String = "  ") -> String?
    where Bytes.Element == UInt8 {
        var parser = Parser(bytes: Array(bytes), indent: Array(indent.utf8))
        guard parser.run() else { return nil }
        return String(decoding: parser.output, as: UTF8.self)
    }

    private struct Parser {
        let bytes: [UInt8]
        let indent: [UInt8]
        /// The most output bytes (``JSONPrettyPrinter/maximumGrowth``).
        let limit: Int
        var index = 0
        var output: [UInt8] = []

        init(bytes: [UInt8], indent: [UInt8]) {
            self.bytes = bytes
            self.indent = indent
            limit = bytes.count * JSONPrettyPrinter.maximumGrowth + 4096
            output.reserveCapacity(bytes.count * 2)
        }

        mutating func run() -> Bool {
            skipWhitespace()
            guard value(depth: 0) else { return false }
            skipWhitespace()
            return index == bytes.count
        }

        mutating func skipWhitespace() {
            while index < bytes.count, [0x20, 0x0A, 0x0D, 0x09].contains(bytes[index]) { index += 1 }
        }

        mutating func newline(_ depth: Int) {
            output.append(0x0A)
            for _ in 0..<depth { output.append(contentsOf: indent) }
        }

        mutating func value(depth: Int) -> Bool {
            guard depth < JSONPrettyPrinter.maximumDepth, index < bytes.count else { return false }
            switch bytes[index] {
            case UInt8(ascii: "{"): return container(depth: depth, close: UInt8(ascii: "}"), isObject: true)
            case UInt8(ascii: "["): return container(depth: depth, close: UInt8(ascii: "]"), isObject: false)
            case UInt8(ascii: "\""): return string()
            case UInt8(ascii: "t"): return literal("true")
            case UInt8(ascii: "f"): return literal("false")
            case UInt8(ascii: "n"): return literal("null")
            default: return number()
            }
        }

        mutating func container(depth: Int, close: UInt8, isObject: Bool) -> Bool {
            output.append(bytes[index])
            index += 1
            skipWhitespace()
            if index < bytes.count, bytes[index] == close {
                output.append(close)
                index += 1
                return true
            }
            // Short arrays of scalars stay on one line.
            if !isObject, let inline = inlineArray() {
                output.append(contentsOf: inline)
                return true
            }
            while true {
                newline(depth + 1)
                guard output.count <= limit else { return false }
                skipWhitespace()
                if isObject {
                    guard index < bytes.count, bytes[index] == UInt8(ascii: "\""), string() else { return false }
                    skipWhitespace()
                    guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return false }
                    index += 1
                    output.append(contentsOf: [UInt8(ascii: ":"), 0x20])
                    skipWhitespace()
                }
                guard value(depth: depth + 1) else { return false }
                skipWhitespace()
                guard index < bytes.count else { return false }
                if bytes[index] == UInt8(ascii: ",") {
                    output.append(bytes[index])
                    index += 1
                    continue
                }
                guard bytes[index] == close else { return false }
                index += 1
                newline(depth)
                output.append(close)
                return true
            }
        }

        /// For an array of at most 8 scalars, `[a, b, c]` on one line; `nil` (nothing consumed) otherwise.
        mutating func inlineArray() -> [UInt8]? {
            let savedIndex = index
            let savedOutput = output
            defer { output = savedOutput }
            output = []
            var count = 0
            while true {
                skipWhitespace()
                guard index < bytes.count, ![UInt8(ascii: "{"), UInt8(ascii: "[")].contains(bytes[index]),
                    value(depth: 1)
                else {
                    index = savedIndex
                    return nil
                }
                count += 1
                skipWhitespace()
                guard index < bytes.count, count <= 8, output.count <= 80 else {
                    index = savedIndex
                    return nil
                }
                if bytes[index] == UInt8(ascii: ",") {
                    output.append(contentsOf: [UInt8(ascii: ","), 0x20])
                    index += 1
                    continue
                }
                guard bytes[index] == UInt8(ascii: "]") else {
                    index = savedIndex
                    return nil
                }
                index += 1
                output.append(UInt8(ascii: "]"))
                return output
            }
        }

        mutating func literal(_ word: String) -> Bool {
            let word = Array(word.utf8)
            guard index + word.count <= bytes.count, Array(bytes[index..<index + word.count]) == word else {
                return false
            }
            output.append(contentsOf: word)
            index += word.count
            return true
        }

        mutating func number() -> Bool {
            let start = index
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard skipDigits() else { return false }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                guard skipDigits() else { return false }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                    index += 1
                }
                guard skipDigits() else { return false }
            }
            output.append(contentsOf: bytes[start..<index])
            return true
        }

        /// Moves past the decimal digits here; `false` when there is none.
        mutating func skipDigits() -> Bool {
            let start = index
            while index < bytes.count, (0x30...0x39).contains(bytes[index]) { index += 1 }
            return index > start
        }

        /// Copies a string, turning `\uXXXX` escapes of printable non-ASCII characters into UTF-8.
        mutating func string() -> Bool {
            output.append(UInt8(ascii: "\""))
            index += 1
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    output.append(byte)
                    index += 1
                    return true
                }
                if byte < 0x20 { return false }
                if byte != UInt8(ascii: "\\") {
                    output.append(byte)
                    index += 1
                    continue
                }
                guard index + 1 < bytes.count else { return false }
                let escaped = bytes[index + 1]
                if escaped == UInt8(ascii: "u") {
                    guard let (scalar, length) = unicodeEscape(at: index) else { return false }
                    if scalar.value >= 0x80, !scalar.properties.generalCategory.isInvisible {
                        output.append(contentsOf: Array(String(Character(scalar)).utf8))
                    } else {
                        output.append(contentsOf: bytes[index..<index + length])
                    }
                    index += length
                    continue
                }
                guard
                    [
                        UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                        UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t")
                    ].contains(escaped)
                else { return false }
                if escaped == UInt8(ascii: "/") {
                    output.append(escaped)
                } else {
                    output.append(contentsOf: [byte, escaped])
                }
                index += 2
            }
            return false
        }

        /// The scalar of `\uXXXX` (or a `\uD8xx\uDCxx` surrogate pair) at `start`, and the bytes it spans.
        func unicodeEscape(at start: Int) -> (Unicode.Scalar, Int)? {
            guard let high = hex4(at: start + 2) else { return nil }
            if (0xD800...0xDBFF).contains(high) {
                guard start + 11 < bytes.count, bytes[start + 6] == UInt8(ascii: "\\"),
                    bytes[start + 7] == UInt8(ascii: "u"),
                    let low = hex4(at: start + 8), (0xDC00...0xDFFF).contains(low),
                    let scalar = Unicode.Scalar(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
                else { return nil }
                return (scalar, 12)
            }
            guard let scalar = Unicode.Scalar(high) else { return nil }
            return (scalar, 6)
        }

        func hex4(at position: Int) -> UInt32? {
            guard position + 4 <= bytes.count else { return nil }
            var value: UInt32 = 0
            for byte in bytes[position..<position + 4] {
                let digit: UInt32
                switch byte {
                case 0x30...0x39: digit = UInt32(byte - 0x30)
                case 0x41...0x46: digit = UInt32(byte - 0x41 + 10)
                case 0x61...0x66: digit = UInt32(byte - 0x61 + 10)
                default: return nil
                }
                value = value << 4 | digit
            }
            return value
        }
    }
}

extension Unicode.GeneralCategory {
    /// Control, format, unassigned, separator characters: kept as escapes so they stay visible.
    var isInvisible: Bool {
        switch self {
        case .control, .format, .unassigned, .privateUse, .surrogate, .lineSeparator, .paragraphSeparator: return true
        default: return false
        }
    }
}
