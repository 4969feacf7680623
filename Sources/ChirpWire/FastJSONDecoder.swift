import Foundation

/// Decodes `Codable` values from JSON bytes directly, without Foundation's generic containers: the fast path of
/// ``JSONMessageCoder``.
///
/// The document is parsed once, strictly (RFC 8259), into a flat table of nodes; containers then read values from
/// the bytes on demand. Whatever it does not handle makes ``decode(_:)`` throw ``FastJSONFallback``, and the caller
/// decodes with Foundation instead, so every error and every edge case is Foundation's: malformed JSON, a type
/// mismatch, a missing key, numbers that are not plain integers for integer types, objects with duplicate or escaped
/// keys or more than ``FastJSONEncoder/maximumKeys`` keys, nested containers and super decoders, and the types of
/// ``isFoundationSpecialJSONType(_:)``.
final class FastJSONDecoder {
    fileprivate enum Kind: UInt8 { case object, array, string, escapedString, number, integer, `true`, `false`, null }

    /// One JSON value: its kind, the range of its bytes (a string's without the quotes), and the index of the node
    /// after its subtree (its next sibling).
    fileprivate struct Node {
        var kind: Kind
        var start: Int
        var end: Int
        var next: Int
    }

    /// The document being decoded: valid only during ``decode(_:from:)``.
    // `@exclusivity(unchecked)`: as in ``FastJSONEncoder``, one thread at a time, no overlapping accesses; the
    // runtime's dynamic check on every access is a large part of a small message's decode.
    @exclusivity(unchecked) fileprivate private(set) var bytes = UnsafeBufferPointer<UInt8>(start: nil, count: 0)
    @exclusivity(unchecked) fileprivate private(set) var nodes: [Node] = []
    /// The key nodes of the objects read so far, each object's a run of its own (kept across calls, like `nodes`).
    @exclusivity(unchecked) fileprivate private(set) var memberKeys: [Int] = []
    /// A copy of the document for ``decode(_:)`` (tests, and callers without a buffer of their own).
    private let owned: [UInt8]
    /// Set while a decode runs: a decoder reused per thread (``CodingScratch``) is not entered twice.
    @exclusivity(unchecked) private(set) var isBusy = false

    /// A decoder for ``decode(_:from:)``, which reads the caller's bytes in place; reusable, its node table kept.
    init() {
        owned = []
    }

    /// A decoder of a copy of `bytes`, for ``decode(_:)``.
    init(bytes: [UInt8]) {
        owned = bytes
    }

    /// Decodes `type` from the bytes given at init, or throws ``FastJSONFallback``.
    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try owned.withUnsafeBufferPointer { try decode(type, from: $0) }
    }

    /// Decodes `type` from `document`, read in place (no copy), or throws ``FastJSONFallback``. The decoder keeps
    /// no reference to `document` afterwards, and keeps its node table's capacity for the next call.
    func decode<T: Decodable>(_ type: T.Type, from document: UnsafeBufferPointer<UInt8>) throws -> T {
        guard !isBusy else { throw FastJSONFallback() }  // one document at a time
        isBusy = true
        bytes = document
        nodes.removeAll(keepingCapacity: true)
        memberKeys.removeAll(keepingCapacity: true)
        defer {
            bytes = UnsafeBufferPointer(start: nil, count: 0)
            isBusy = false
        }
        return try decodeDocument(type)
    }

    private func decodeDocument<T: Decodable>(_ type: T.Type) throws -> T {
        if isFoundationSpecialJSONType(T.self) { throw FastJSONFallback() }
        // Foundation refuses a document with invalid UTF-8 anywhere (an ignored key included).
        if bytes.contains(where: { $0 >= 0x80 }),
            String(validating: bytes, as: UTF8.self) == nil
        {
            throw FastJSONFallback()
        }
        nodes.reserveCapacity(16)
        var position = 0
        skipWhitespace(&position)
        try parseValue(&position, depth: 0)
        skipWhitespace(&position)
        guard position == bytes.count else { throw FastJSONFallback() }
        return try FastJSONValueDecoder(document: self, node: 0, codingPath: []).decodeValue(T.self)
    }

    // MARK: - parsing

    private func skipWhitespace(_ position: inout Int) {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    private func parseValue(_ position: inout Int, depth: Int) throws {
        guard position < bytes.count, depth < FastJSONEncoder.maximumDepth else { throw FastJSONFallback() }
        let index = nodes.count
        let start = position
        switch bytes[position] {
        case UInt8(ascii: "{"):
            nodes.append(Node(kind: .object, start: start, end: start, next: 0))
            position += 1
            skipWhitespace(&position)
            if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
                position += 1
            } else {
                while true {
                    guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else {
                        throw FastJSONFallback()
                    }
                    try parseString(&position)
                    skipWhitespace(&position)
                    guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { throw FastJSONFallback() }
                    position += 1
                    skipWhitespace(&position)
                    try parseValue(&position, depth: depth + 1)
                    skipWhitespace(&position)
                    guard position < bytes.count else { throw FastJSONFallback() }
                    if bytes[position] == UInt8(ascii: ",") {
                        position += 1
                        skipWhitespace(&position)
                    } else if bytes[position] == UInt8(ascii: "}") {
                        position += 1
                        break
                    } else {
                        throw FastJSONFallback()
                    }
                }
            }
            nodes[index].end = position
        case UInt8(ascii: "["):
            nodes.append(Node(kind: .array, start: start, end: start, next: 0))
            position += 1
            skipWhitespace(&position)
            if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
                position += 1
            } else {
                while true {
                    try parseValue(&position, depth: depth + 1)
                    skipWhitespace(&position)
                    guard position < bytes.count else { throw FastJSONFallback() }
                    if bytes[position] == UInt8(ascii: ",") {
                        position += 1
                        skipWhitespace(&position)
                    } else if bytes[position] == UInt8(ascii: "]") {
                        position += 1
                        break
                    } else {
                        throw FastJSONFallback()
                    }
                }
            }
            nodes[index].end = position
        case UInt8(ascii: "\""):
            try parseString(&position)
            return
        case UInt8(ascii: "t"): try parseLiteral(&position, [0x74, 0x72, 0x75, 0x65], kind: .true)
        case UInt8(ascii: "f"): try parseLiteral(&position, [0x66, 0x61, 0x6C, 0x73, 0x65], kind: .false)
        case UInt8(ascii: "n"): try parseLiteral(&position, [0x6E, 0x75, 0x6C, 0x6C], kind: .null)
        default: try parseNumber(&position)
        }
        nodes[index].next = nodes.count
    }

    private func parseLiteral(_ position: inout Int, _ literal: [UInt8], kind: Kind) throws {
        guard bytes.count - position >= literal.count else { throw FastJSONFallback() }
        for (offset, byte) in literal.enumerated() where bytes[position + offset] != byte { throw FastJSONFallback() }
        nodes.append(Node(kind: kind, start: position, end: position + literal.count, next: 0))
        position += literal.count
    }

    /// A string starting at the quote at `position`. Control characters must be escaped. A string with escapes is
    /// unescaped here once, to check them (and the UTF-8 they make), and again when it is read: a bad escape in a value
    /// the type never reads must still decline the document, which Foundation refuses (the json fuzz target found
    /// `\ur` and `\u12` accepted there). Strings with escapes are rare in messages; the plain ones cost nothing more.
    private func parseString(_ position: inout Int) throws {
        let start = position + 1
        var index = start
        var escaped = false
        while true {
            guard index < bytes.count else { throw FastJSONFallback() }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") { break }
            if byte < 0x20 { throw FastJSONFallback() }
            if byte == UInt8(ascii: "\\") {
                escaped = true
                index += 2
            } else {
                index += 1
            }
        }
        if escaped { _ = try unescape(start..<index) }
        nodes.append(Node(kind: escaped ? .escapedString : .string, start: start, end: index, next: nodes.count + 1))
        position = index + 1
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`
    private func parseNumber(_ position: inout Int) throws {
        let start = position
        var index = position
        func digits() -> Int {
            let first = index
            while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 { index += 1 }
            return index - first
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count else { throw FastJSONFallback() }
        // Whether the digits so far are all zeros.
        var zero = false
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            zero = true
        } else if digits() == 0 {
            throw FastJSONFallback()
        }
        var integer = true
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            integer = false
            let fraction = index
            guard digits() > 0 else { throw FastJSONFallback() }
            zero = zero && bytes[fraction..<index].allSatisfy { $0 == UInt8(ascii: "0") }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            // A zero with an exponent is valid JSON that Foundation refuses in some forms ("0e5", "0.00e10",
            // "-0.0e1") and not in others ("0.0e1"): leave them all to Foundation. (The json fuzz target found the
            // forms after "0e5".)
            guard !zero else { throw FastJSONFallback() }
            index += 1
            integer = false
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard digits() > 0 else { throw FastJSONFallback() }
        }
        nodes.append(Node(kind: integer ? .integer : .number, start: start, end: index, next: 0))
        position = index
    }

    // MARK: - reading values

    fileprivate func node(_ index: Int) -> Node { nodes[index] }

    fileprivate func bool(_ index: Int) throws -> Bool {
        switch nodes[index].kind {
        case .true: return true
        case .false: return false
        default: throw FastJSONFallback()
        }
    }

    fileprivate func isNull(_ index: Int) -> Bool { nodes[index].kind == .null }

    /// Records the key node of an object member (see ``memberKeys``).
    fileprivate func appendMemberKey(_ index: Int) { memberKeys.append(index) }

    fileprivate func string(_ index: Int) throws -> String {
        let node = nodes[index]
        switch node.kind {
        case .string:
            // The whole document is valid UTF-8 (checked in `decodeDocument`) and a string node starts and ends at a
            // quote, so its bytes are valid UTF-8 too: `String(decoding:)` takes them as they are, without the
            // generic `String(validating:)` (a runtime metadata lookup per string, on Linux).
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[node.start..<node.end]), as: UTF8.self)
        case .escapedString:
            return try unescape(node.start..<node.end)
        default:
            throw FastJSONFallback()
        }
    }

    private func unescape(_ range: Range<Int>) throws -> String {
        var out: [UInt8] = []
        out.reserveCapacity(range.count)
        var index = range.lowerBound
        func hex4() throws -> UInt32 {
            guard index + 4 <= range.upperBound else { throw FastJSONFallback() }
            var value: UInt32 = 0
            for byte in bytes[index..<(index + 4)] {
                value <<= 4
                switch byte {
                case 0x30...0x39: value |= UInt32(byte - 0x30)
                case 0x41...0x46: value |= UInt32(byte - 0x41 + 10)
                case 0x61...0x66: value |= UInt32(byte - 0x61 + 10)
                default: throw FastJSONFallback()
                }
            }
            index += 4
            return value
        }
        while index < range.upperBound {
            let byte = bytes[index]
            index += 1
            guard byte == UInt8(ascii: "\\") else {
                out.append(byte)
                continue
            }
            guard index < range.upperBound else { throw FastJSONFallback() }
            let escape = bytes[index]
            index += 1
            switch escape {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var code = try hex4()
                if code >= 0xD800, code < 0xDC00 {
                    // A high surrogate: a low one must follow.
                    guard index + 2 <= range.upperBound, bytes[index] == UInt8(ascii: "\\"),
                        bytes[index + 1] == UInt8(ascii: "u")
                    else { throw FastJSONFallback() }
                    index += 2
                    let low = try hex4()
                    guard low >= 0xDC00, low < 0xE000 else { throw FastJSONFallback() }
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                }
                guard let scalar = Unicode.Scalar(code) else { throw FastJSONFallback() }
                out.append(contentsOf: UTF8.encode(scalar).map { Array($0) } ?? [])
            default:
                throw FastJSONFallback()
            }
        }
        guard let string = String(validating: out, as: UTF8.self) else { throw FastJSONFallback() }
        return string
    }

    /// A plain JSON integer (no fraction, no exponent) that fits `T`.
    fileprivate func integer<T: FixedWidthInteger>(_ index: Int, as type: T.Type) throws -> T {
        let node = nodes[index]
        guard node.kind == .integer else { throw FastJSONFallback() }
        var position = node.start
        let negative = bytes[position] == UInt8(ascii: "-")
        if negative { position += 1 }
        var magnitude: UInt64 = 0
        while position < node.end {
            let (times10, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(UInt64(bytes[position] - 0x30))
            guard !overflow1, !overflow2 else { throw FastJSONFallback() }
            magnitude = sum
            position += 1
        }
        if negative {
            guard T.isSigned, magnitude <= UInt64(Int64.max) + 1 else { throw FastJSONFallback() }
            let value = magnitude == UInt64(Int64.max) + 1 ? Int64.min : -Int64(magnitude)
            guard let result = T(exactly: value) else { throw FastJSONFallback() }
            return result
        }
        guard let result = T(exactly: magnitude) else { throw FastJSONFallback() }
        return result
    }

    /// A number that fits a `Double`: not one that overflows to infinity, nor one that underflows to zero (Foundation
    /// refuses both).
    fileprivate func double(_ index: Int) throws -> Double {
        let node = nodes[index]
        guard node.kind == .integer || node.kind == .number,
            let value = Double(String(decoding: bytes[node.start..<node.end], as: UTF8.self)), value.isFinite,
            value != 0 || !hasNonZeroMantissa(node)
        else { throw FastJSONFallback() }
        return value
    }

    /// As ``double(_:)``, for a `Float`.
    fileprivate func float(_ index: Int) throws -> Float {
        let node = nodes[index]
        guard node.kind == .integer || node.kind == .number,
            let value = Float(String(decoding: bytes[node.start..<node.end], as: UTF8.self)), value.isFinite,
            value != 0 || !hasNonZeroMantissa(node)
        else { throw FastJSONFallback() }
        return value
    }

    /// Whether a number node has a non-zero digit before its exponent (so that a zero result is an underflow).
    private func hasNonZeroMantissa(_ node: Node) -> Bool {
        for byte in bytes[node.start..<node.end] {
            if byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") { return false }
            if byte >= UInt8(ascii: "1"), byte <= UInt8(ascii: "9") { return true }
        }
        return false
    }

    /// Whether the bytes of string node `index` (unescaped) equal `key`.
    fileprivate func keyEquals(_ index: Int, _ key: String) -> Bool {
        let node = nodes[index]
        var key = key
        return key.withUTF8 { utf8 in
            guard utf8.count == node.end - node.start else { return false }
            return utf8.elementsEqual(UnsafeBufferPointer(rebasing: bytes[node.start..<node.end]))
        }
    }

    /// Whether string nodes `a` and `b` have the same bytes.
    fileprivate func sameKey(_ a: Int, _ b: Int) -> Bool {
        let first = nodes[a]
        let second = nodes[b]
        guard first.end - first.start == second.end - second.start else { return false }
        return bytes[first.start..<first.end].elementsEqual(bytes[second.start..<second.end])
    }
}

/// The `Decoder` for one node of a ``FastJSONDecoder`` document.
private struct FastJSONValueDecoder: Decoder {
    let document: FastJSONDecoder
    let node: Int
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    /// Decodes `type` from this node: primitives directly, anything else through its `init(from:)`.
    func decodeValue<T: Decodable>(_ type: T.Type) throws -> T {
        if T.self == String.self, let value = try document.string(node) as? T { return value }
        if T.self == Int.self, let value = try document.integer(node, as: Int.self) as? T { return value }
        if T.self == Bool.self, let value = try document.bool(node) as? T { return value }
        if T.self == Double.self, let value = try document.double(node) as? T { return value }
        if isFoundationSpecialJSONType(T.self) { throw FastJSONFallback() }
        return try T(from: self)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(
            try FastJSONKeyedDecodingContainer<Key>(document: document, node: node, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try FastJSONUnkeyedDecodingContainer(document: document, node: node, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        FastJSONSingleValueDecodingContainer(decoder: self)
    }
}

private struct FastJSONKeyedDecodingContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let document: FastJSONDecoder
    let codingPath: [any CodingKey]
    /// The object's members: their key nodes, at these positions of the document's `memberKeys` (each value node
    /// follows its key node). Kept in the document, whose storage is reused, rather than in an array per object.
    private let members: Range<Int>

    init(document: FastJSONDecoder, node: Int, codingPath: [any CodingKey]) throws {
        let object = document.node(node)
        guard object.kind == .object else { throw FastJSONFallback() }
        let start = document.memberKeys.count
        var index = node + 1
        while index < object.next {
            guard document.memberKeys.count - start < FastJSONEncoder.maximumKeys, document.node(index).kind == .string
            else {
                throw FastJSONFallback()
            }
            for member in start..<document.memberKeys.count where document.sameKey(document.memberKeys[member], index) {
                throw FastJSONFallback()
            }
            document.appendMemberKey(index)
            index = document.node(index + 1).next
        }
        self.document = document
        self.codingPath = codingPath
        self.members = start..<document.memberKeys.count
    }

    var allKeys: [Key] {
        members.compactMap { member in
            (try? document.string(document.memberKeys[member])).flatMap { Key(stringValue: $0) }
        }
    }

    private func find(_ key: Key) -> Int? {
        let name = key.stringValue
        for member in members {
            let keyNode = document.memberKeys[member]
            if document.keyEquals(keyNode, name) { return keyNode + 1 }
        }
        return nil
    }

    private func value(_ key: Key) throws -> Int {
        guard let index = find(key) else { throw FastJSONFallback() }
        return index
    }

    func contains(_ key: Key) -> Bool { find(key) != nil }
    func decodeNil(forKey key: Key) throws -> Bool { document.isNull(try value(key)) }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try document.bool(try value(key)) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try document.string(try value(key)) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try document.double(try value(key)) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try document.float(try value(key)) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try document.integer(try value(key), as: type) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try document.integer(try value(key), as: type) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try document.integer(try value(key), as: type) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try document.integer(try value(key), as: type) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try document.integer(try value(key), as: type) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try document.integer(try value(key), as: type) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try document.integer(try value(key), as: type) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 {
        try document.integer(try value(key), as: type)
    }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 {
        try document.integer(try value(key), as: type)
    }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 {
        try document.integer(try value(key), as: type)
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try FastJSONValueDecoder(document: document, node: try value(key), codingPath: codingPath + [key]).decodeValue(
            type)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        throw FastJSONFallback()
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer { throw FastJSONFallback() }
    func superDecoder() throws -> any Decoder { throw FastJSONFallback() }
    func superDecoder(forKey key: Key) throws -> any Decoder { throw FastJSONFallback() }
}

private struct FastJSONUnkeyedDecodingContainer: UnkeyedDecodingContainer {
    let document: FastJSONDecoder
    let codingPath: [any CodingKey]
    let count: Int?
    private(set) var currentIndex = 0
    /// The node of the next element.
    private var next: Int
    private let end: Int

    init(document: FastJSONDecoder, node: Int, codingPath: [any CodingKey]) throws {
        let array = document.node(node)
        guard array.kind == .array else { throw FastJSONFallback() }
        var count = 0
        var index = node + 1
        while index < array.next {
            count += 1
            index = document.node(index).next
        }
        self.document = document
        self.codingPath = codingPath
        self.count = count
        next = node + 1
        end = array.next
    }

    var isAtEnd: Bool { next >= end }

    private mutating func element() throws -> Int {
        guard next < end else { throw FastJSONFallback() }
        let index = next
        next = document.node(index).next
        currentIndex += 1
        return index
    }

    mutating func decodeNil() throws -> Bool {
        guard next < end else { throw FastJSONFallback() }
        guard document.isNull(next) else { return false }
        _ = try element()
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try document.bool(try element()) }
    mutating func decode(_ type: String.Type) throws -> String { try document.string(try element()) }
    mutating func decode(_ type: Double.Type) throws -> Double { try document.double(try element()) }
    mutating func decode(_ type: Float.Type) throws -> Float { try document.float(try element()) }
    mutating func decode(_ type: Int.Type) throws -> Int { try document.integer(try element(), as: type) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try document.integer(try element(), as: type) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try document.integer(try element(), as: type) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try document.integer(try element(), as: type) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try document.integer(try element(), as: type) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try document.integer(try element(), as: type) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try document.integer(try element(), as: type) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try document.integer(try element(), as: type) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try document.integer(try element(), as: type) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try document.integer(try element(), as: type) }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let path = codingPath + [FastJSONIndexKey(intValue: currentIndex)]
        return try FastJSONValueDecoder(document: document, node: try element(), codingPath: path).decodeValue(type)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<
        NestedKey
    > {
        throw FastJSONFallback()
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { throw FastJSONFallback() }
    mutating func superDecoder() throws -> any Decoder { throw FastJSONFallback() }
}

private struct FastJSONSingleValueDecodingContainer: SingleValueDecodingContainer {
    let decoder: FastJSONValueDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }
    private var document: FastJSONDecoder { decoder.document }
    private var node: Int { decoder.node }

    func decodeNil() -> Bool { document.isNull(node) }
    func decode(_ type: Bool.Type) throws -> Bool { try document.bool(node) }
    func decode(_ type: String.Type) throws -> String { try document.string(node) }
    func decode(_ type: Double.Type) throws -> Double { try document.double(node) }
    func decode(_ type: Float.Type) throws -> Float { try document.float(node) }
    func decode(_ type: Int.Type) throws -> Int { try document.integer(node, as: type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try document.integer(node, as: type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try document.integer(node, as: type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try document.integer(node, as: type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try document.integer(node, as: type) }
    func decode(_ type: UInt.Type) throws -> UInt { try document.integer(node, as: type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try document.integer(node, as: type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try document.integer(node, as: type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try document.integer(node, as: type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try document.integer(node, as: type) }

    func decode<T: Decodable>(_ type: T.Type) throws -> T { try decoder.decodeValue(type) }
}
