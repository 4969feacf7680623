/// Checks that bytes are one JSON value exactly as RFC 8259 defines it, and says what is wrong and where when they are
/// not: the check `chirp send` makes before it sends a payload.
///
/// Neither of the parsers at hand serves. Foundation's `JSONSerialization` on Linux (Swift 6.3) takes a trailing comma
/// in objects and arrays and a leading byte order mark, which RFC 8259 does not, and what else it tolerates may grow
/// with its JSON5 support; its messages give a character offset only. The core's `FastJSONDecoder` is strict, but it
/// decodes `Decodable` types rather than checking a document, declines (for Foundation to decide) some valid
/// documents on purpose, such as a zero with an exponent or deep nesting, and says neither what is wrong nor where. This checker is small: one pass, no values built, an explicit stack instead
/// of recursion (any depth, no stack overflow).
///
/// Beyond the grammar it refuses what RFC 8259 says makes a document unportable, which a receiver's parser refuses
/// too: bytes that are not UTF-8 (section 8.1), a byte order mark (section 8.1), and a `\u` escape of half a UTF-16
/// surrogate pair (section 8.2).
enum StrictJSON {
    /// What is wrong, and where (line and column count from 1; the column in characters).
    struct SyntaxError: Error, Equatable, CustomStringConvertible {
        var problem: String
        var line: Int
        var column: Int

        var description: String { "\(problem) (line \(line), column \(column))" }
    }

    /// Throws ``SyntaxError`` unless `bytes` are exactly one JSON value, with optional whitespace around it.
    static func check(_ bytes: [UInt8]) throws(SyntaxError) {
        var checker = Checker(bytes: bytes)
        try checker.run()
    }

    private enum Container { case object, array }

    private struct Checker {
        let bytes: [UInt8]
        var index = 0
        var stack: [Container] = []

        init(bytes: [UInt8]) { self.bytes = bytes }

        var current: UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func run() throws(SyntaxError) {
            if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
                throw fail("a byte order mark (U+FEFF) before the JSON value; JSON text has none")
            }
            if String(validating: bytes, as: UTF8.self) == nil {
                throw fail("bytes that are not UTF-8", at: firstInvalidUTF8())
            }
            skipWhitespace()
            guard current != nil else { throw fail("no JSON value, only whitespace") }
            var expectingValue = true
            while true {
                if expectingValue {
                    if try valueOpensContainer() { continue }  // its first value (or member) follows
                    expectingValue = false
                }
                // After a value: the end, or what its container takes next.
                skipWhitespace()
                guard let container = stack.last else {
                    guard let byte = current else { return }
                    throw fail("\(describe(byte)) after the JSON value; give one value only")
                }
                let closer = container == .object ? UInt8(ascii: "}") : UInt8(ascii: "]")
                guard let byte = current else {
                    throw fail(
                        container == .object
                            ? "the object is not closed (a '}' is missing)"
                            : "the array is not closed (a ']' is missing)")
                }
                if byte == closer {
                    index += 1
                    stack.removeLast()
                } else if byte == UInt8(ascii: ",") {
                    let comma = index
                    index += 1
                    skipWhitespace()
                    if current == closer {
                        throw fail("a trailing comma before '\(Character(Unicode.Scalar(closer)))'", at: comma)
                    }
                    if container == .object { try member() }
                    expectingValue = true
                } else {
                    throw fail(
                        container == .object
                            ? "expected ',' or '}' after an object member, found \(describe(byte))"
                            : "expected ',' or ']' after an array element, found \(describe(byte))")
                }
            }
        }

        /// An object member's key and colon (at the key); its value follows.
        mutating func member() throws(SyntaxError) {
            guard let byte = current else { throw fail("the object is not closed (a '}' is missing)") }
            switch byte {
            case UInt8(ascii: "\""):
                try string()
            case UInt8(ascii: "'"):
                throw fail("a single-quoted key; JSON strings take double quotes")
            case UInt8(ascii: "/"):
                throw fail("a comment; JSON has none")
            default:
                throw fail("an object key must be a string in double quotes, found \(describe(byte))")
            }
            skipWhitespace()
            guard let colon = current, colon == UInt8(ascii: ":") else {
                throw fail("expected ':' after the object key, found \(current.map(describe) ?? "the end")")
            }
            index += 1
            skipWhitespace()
        }

        /// Moves past an opening bracket and the white space after it; `false` when `close` follows (an empty
        /// container, read whole), `true` when a member or element does.
        mutating func opensContainer(closedBy close: UInt8) -> Bool {
            index += 1
            skipWhitespace()
            guard current == close else { return true }
            index += 1
            return false
        }

        /// Reads a value, or the opening of a container that is not empty: then returns `true`, with the container
        /// pushed (and, for an object, its first key read), for ``run()`` to read its first value.
        mutating func valueOpensContainer() throws(SyntaxError) -> Bool {
            guard let byte = current else { throw fail("a value is missing at the end") }
            switch byte {
            case UInt8(ascii: "{"):
                guard opensContainer(closedBy: UInt8(ascii: "}")) else { return false }
                stack.append(.object)
                try member()
                return true
            case UInt8(ascii: "["):
                guard opensContainer(closedBy: UInt8(ascii: "]")) else { return false }
                stack.append(.array)
                return true
            case UInt8(ascii: "\""):
                try string()
            case UInt8(ascii: "t"): try literal("true")
            case UInt8(ascii: "f"): try literal("false")
            case UInt8(ascii: "n"): try literal("null")
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                try number()
            case UInt8(ascii: "'"):
                throw fail("a single-quoted string; JSON strings take double quotes")
            case UInt8(ascii: "/"):
                throw fail("a comment; JSON has none")
            case UInt8(ascii: "+"):
                throw fail("a number with a plus sign; JSON numbers have none")
            case UInt8(ascii: "."):
                throw fail("a number without a digit before its decimal point")
            case UInt8(ascii: "N") where word() == "NaN", UInt8(ascii: "I") where word() == "Infinity":
                throw fail("\(word()) is not a JSON number")
            case UInt8(ascii: "}"), UInt8(ascii: "]"), UInt8(ascii: ","):
                throw fail("a value is missing before \(describe(byte))")
            default:
                throw fail("\(describe(byte)) where a value should be")
            }
            return false
        }

        mutating func literal(_ text: String) throws(SyntaxError) {
            let expected = Array(text.utf8)
            guard bytes.count - index >= expected.count, Array(bytes[index..<index + expected.count]) == expected else {
                throw fail("'\(word())' where a value should be (true, false and null are lower case)")
            }
            index += expected.count
        }

        /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`
        mutating func number() throws(SyntaxError) {
            let start = index
            if current == UInt8(ascii: "-") { index += 1 }
            guard let first = current, isDigit(first) else {
                if current == UInt8(ascii: "I") { throw fail("-\(word()) is not a JSON number", at: start) }
                throw fail("a minus sign without digits", at: start)
            }
            if first == UInt8(ascii: "0") {
                index += 1
                if current == UInt8(ascii: "x") || current == UInt8(ascii: "X") {
                    throw fail("a hexadecimal number; JSON numbers are decimal", at: start)
                }
                if let next = current, isDigit(next) {
                    throw fail("a number with a leading zero", at: start)
                }
            } else {
                digits()
            }
            if current == UInt8(ascii: ".") {
                index += 1
                guard let next = current, isDigit(next) else {
                    throw fail("a number without a digit after its decimal point", at: start)
                }
                digits()
            }
            if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
                index += 1
                if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
                guard let next = current, isDigit(next) else {
                    throw fail("a number without digits in its exponent", at: start)
                }
                digits()
            }
        }

        mutating func string() throws(SyntaxError) {
            let start = index
            index += 1  // the opening quote
            while true {
                guard let byte = current else { throw fail("the string is not closed (a '\"' is missing)", at: start) }
                switch byte {
                case UInt8(ascii: "\""):
                    index += 1
                    return
                case UInt8(ascii: "\\"):
                    try escape()
                case 0x00..<0x20:
                    throw fail(
                        "a raw control character U+\(hex(UInt32(byte))) in a string; write it as an escape (\\n, \\t, \\u00XX)"
                    )
                default:
                    index += 1
                }
            }
        }

        /// An escape in a string, at its backslash.
        mutating func escape() throws(SyntaxError) {
            let start = index
            index += 1
            guard let byte = current else { throw fail("the string is not closed (a '\"' is missing)", at: start) }
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                index += 1
            case UInt8(ascii: "u"):
                index += 1
                let unit = try hex4(escapeAt: start)
                if (0xDC00...0xDFFF).contains(unit) {
                    throw fail(
                        "\\u\(hex(unit)) is the second half of a UTF-16 surrogate pair, without its first half",
                        at: start)
                }
                if (0xD800...0xDBFF).contains(unit) {
                    let second = index
                    guard current == UInt8(ascii: "\\"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "u")
                    else {
                        throw fail(
                            "\\u\(hex(unit)) is the first half of a UTF-16 surrogate pair, without its second half",
                            at: start)
                    }
                    index += 2
                    let low = try hex4(escapeAt: second)
                    guard (0xDC00...0xDFFF).contains(low) else {
                        throw fail(
                            "\\u\(hex(unit)) is the first half of a UTF-16 surrogate pair, without its second half",
                            at: start)
                    }
                }
            default:
                throw fail("an invalid escape \\\(describeCharacter(byte)) in a string", at: start)
            }
        }

        /// Four hexadecimal digits of a `\u` escape (at `escapeAt`).
        mutating func hex4(escapeAt start: Int) throws(SyntaxError) -> UInt32 {
            var value: UInt32 = 0
            for _ in 0..<4 {
                guard let byte = current, let digit = hexDigit(byte) else {
                    throw fail("a \\u escape needs four hexadecimal digits", at: start)
                }
                value = value << 4 | digit
                index += 1
            }
            return value
        }

        mutating func digits() {
            while let byte = current, isDigit(byte) { index += 1 }
        }

        mutating func skipWhitespace() {
            while let byte = current {
                switch byte {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }

        func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

        func hexDigit(_ byte: UInt8) -> UInt32? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt32(byte - 0x30)
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return UInt32(byte - 0x61 + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return UInt32(byte - 0x41 + 10)
            default: return nil
            }
        }

        func hex(_ value: UInt32) -> String {
            let digits = String(value, radix: 16, uppercase: true)
            return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
        }

        /// The letters from the current position: a misspelt literal, `NaN`, `Infinity`.
        func word() -> String {
            var end = index
            while end < bytes.count, end - index < 20,
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(bytes[end])
                    || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(bytes[end])
            {
                end += 1
            }
            return String(decoding: bytes[index..<max(end, min(index + 1, bytes.count))], as: UTF8.self)
        }

        func describe(_ byte: UInt8) -> String {
            "'\(describeCharacter(byte))'"
        }

        func describeCharacter(_ byte: UInt8) -> String {
            if byte >= 0x20 && byte < 0x7F { return String(Character(Unicode.Scalar(byte))) }
            if byte < 0x80 { return "U+\(hex(UInt32(byte)))" }
            // A whole character from here (the bytes are valid UTF-8 by now).
            var end = index + 1
            while end < bytes.count, bytes[end] & 0xC0 == 0x80 { end += 1 }
            return String(decoding: bytes[index..<end], as: UTF8.self)
        }

        /// The offset of the first byte that is not part of valid UTF-8.
        func firstInvalidUTF8() -> Int {
            var parser = Unicode.UTF8.ForwardParser()
            var iterator = bytes.makeIterator()
            var offset = 0
            while case .valid(let scalar) = parser.parseScalar(from: &iterator) { offset += scalar.count }
            return offset
        }

        func fail(_ problem: String) -> SyntaxError { fail(problem, at: index) }

        func fail(_ problem: String, at offset: Int) -> SyntaxError {
            let offset = min(offset, bytes.count)
            let before = bytes[..<offset]
            let lineStart = (before.lastIndex(of: 0x0A).map { $0 + 1 }) ?? 0
            let line = before.reduce(1) { $0 + ($1 == 0x0A ? 1 : 0) }
            let column = String(decoding: bytes[lineStart..<offset], as: UTF8.self).count + 1
            return SyntaxError(problem: problem, line: line, column: column)
        }
    }
}
