import Foundation
import NIOCore

/// Thrown inside the fast JSON coders when a value needs Foundation's coder instead (a `Date`, `Data`, `URL` or
/// `Decimal`, a container shape they do not handle, many or duplicate keys, or any error). It never leaves
/// ``JSONMessageCoder``, which then encodes or decodes the whole value again with Foundation.
struct FastJSONFallback: Error {}

/// The types Foundation's `JSONEncoder` and `JSONDecoder` treat specially (dates by strategy, data as base64, URLs as
/// strings, decimals as numbers): the fast coders leave them, and every value containing them, to Foundation.
@inline(__always)
func isFoundationSpecialJSONType(_ type: Any.Type) -> Bool {
    type == Date.self || type == Data.self || type == URL.self || type == Decimal.self
}

/// Encodes `Codable` values to JSON bytes directly, without Foundation's generic containers: the fast path of
/// ``JSONMessageCoder`` for the small structs most messages are.
///
/// It writes as it goes, so it handles containers used the way synthesized `Codable` conformances use them: one
/// container per value, filled before the next value starts. Keys come out in the order they are encoded, strings
/// and numbers as Foundation's `JSONEncoder` writes them (`/` escaped, integral doubles without `.0`). Anything
/// else (nested containers, super encoders, a second container for one value, duplicate keys, more than
/// ``maximumKeys`` keys in one object, non-finite floats, the types of ``isFoundationSpecialJSONType(_:)``) makes
/// ``encode(_:)`` throw ``FastJSONFallback``.
final class FastJSONEncoder {
    /// Objects with more keys than this go to Foundation (duplicate keys are checked by a linear scan).
    static let maximumKeys = 32
    /// Values nested deeper than this go to Foundation.
    static let maximumDepth = 64

    // `@exclusivity(unchecked)` on the stored properties of this class: an encoder is used by one thread at a time (its
    // owner, or ``CodingScratch``'s thread), and no access to a property overlaps another to the same property. The
    // runtime's dynamic check on every access cost about a quarter of a small message's send (perf, `oneway.small`).
    @exclusivity(unchecked) private(set) var bytes: [UInt8] = []
    @exclusivity(unchecked) fileprivate var codingPathStorage: [any CodingKey] = []
    /// Set when a value used the encoder in a way it cannot write as it goes; checked after each value.
    @exclusivity(unchecked) fileprivate var failed = false

    fileprivate enum ContainerKind: UInt8 { case none, keyed, unkeyed, single }

    fileprivate struct Level {
        var kind: ContainerKind = .none
        var count = 0
        /// Where this level's keys start in `keys`.
        var keysStart = 0
    }
    @exclusivity(unchecked) private var levels: [Level] = []
    @exclusivity(unchecked) fileprivate var keys: [String] = []

    init() {
        bytes.reserveCapacity(128)
    }

    /// Set while an encode runs: an encoder reused per thread (``CodingScratch``) is not entered twice.
    @exclusivity(unchecked) private(set) var isBusy = false

    /// The JSON of `value`, or ``FastJSONFallback``.
    func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        try encodeValue(value)
        guard !failed, levels.isEmpty else { throw FastJSONFallback() }
        return bytes
    }

    /// Appends the JSON of `value` to `buffer`, or throws ``FastJSONFallback`` (and appends nothing). The encoder is
    /// left empty, its storage kept for the next call.
    func encode<T: Encodable>(_ value: T, into buffer: inout ByteBuffer) throws {
        guard !isBusy else { throw FastJSONFallback() }  // one value at a time
        isBusy = true
        defer {
            bytes.removeAll(keepingCapacity: true)
            codingPathStorage.removeAll(keepingCapacity: true)
            levels.removeAll(keepingCapacity: true)
            keys.removeAll(keepingCapacity: true)
            failed = false
            isBusy = false
        }
        try encodeValue(value)
        guard !failed, levels.isEmpty else { throw FastJSONFallback() }
        buffer.writeBytes(bytes)
    }

    fileprivate var depth: Int { levels.count }

    /// Writes one value at the current position.
    fileprivate func encodeValue<T: Encodable>(_ value: T) throws {
        if failed { throw FastJSONFallback() }
        if try writePrimitive(value) { return }
        if isFoundationSpecialJSONType(T.self) || levels.count >= Self.maximumDepth { throw FastJSONFallback() }
        levels.append(Level(keysStart: keys.count))
        try value.encode(to: self)
        guard !failed, let level = levels.popLast() else { throw FastJSONFallback() }
        switch level.kind {
        case .none: throw FastJSONFallback()  // Foundation writes `{}` for a value that encodes nothing
        case .keyed:
            bytes.append(UInt8(ascii: "}"))
            keys.removeSubrange(level.keysStart...)
        case .unkeyed: bytes.append(UInt8(ascii: "]"))
        case .single: if level.count != 1 { throw FastJSONFallback() }
        }
    }

    /// Writes `value` if it is a JSON primitive; `false` if it is not one. Metatypes are compared first: a failing
    /// dynamic cast costs far more than a comparison.
    @inline(__always)
    private func writePrimitive<T: Encodable>(_ value: T) throws -> Bool {
        let type = T.self
        if type == String.self, let value = value as? String {
            writeString(value)
        } else if type == Int.self, let value = value as? Int {
            writeInteger(Int64(value))
        } else if type == Bool.self, let value = value as? Bool {
            writeBool(value)
        } else if type == Double.self, let value = value as? Double {
            try writeDouble(value)
        } else if type == Int64.self, let value = value as? Int64 {
            writeInteger(value)
        } else if type == UInt64.self, let value = value as? UInt64 {
            writeUnsigned(value)
        } else if type == UInt.self, let value = value as? UInt {
            writeUnsigned(UInt64(value))
        } else if type == Int32.self, let value = value as? Int32 {
            writeInteger(Int64(value))
        } else if type == UInt32.self, let value = value as? UInt32 {
            writeUnsigned(UInt64(value))
        } else if type == Int16.self, let value = value as? Int16 {
            writeInteger(Int64(value))
        } else if type == UInt16.self, let value = value as? UInt16 {
            writeUnsigned(UInt64(value))
        } else if type == Int8.self, let value = value as? Int8 {
            writeInteger(Int64(value))
        } else if type == UInt8.self, let value = value as? UInt8 {
            writeUnsigned(UInt64(value))
        } else if type == Float.self, let value = value as? Float {
            try writeFloat(value)
        } else {
            return false
        }
        return true
    }

    // MARK: - primitives

    fileprivate func writeNull() { bytes.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C]) }  // null

    fileprivate func writeBool(_ value: Bool) {
        if value {
            bytes.append(contentsOf: [0x74, 0x72, 0x75, 0x65])  // true
        } else {
            bytes.append(contentsOf: [0x66, 0x61, 0x6C, 0x73, 0x65])  // false
        }
    }

    fileprivate func writeInteger(_ value: Int64) {
        if value < 0 {
            bytes.append(UInt8(ascii: "-"))
            writeUnsigned(value.magnitude)
        } else {
            writeUnsigned(UInt64(value))
        }
    }

    fileprivate func writeUnsigned(_ value: UInt64) {
        if value < 10 {
            bytes.append(UInt8(truncatingIfNeeded: value) &+ 0x30)
            return
        }
        var digits: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)  // 32 bytes: room for 20 digits
        var count = 0
        var rest = value
        withUnsafeMutableBytes(of: &digits) { digits in
            while rest > 0 {
                digits[31 - count] = UInt8(truncatingIfNeeded: rest % 10) &+ 0x30
                rest /= 10
                count += 1
            }
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: digits[(32 - count)...]))
        }
    }

    fileprivate func writeDouble(_ value: Double) throws {
        guard value.isFinite else { throw FastJSONFallback() }  // Foundation throws (or applies a strategy)
        writeFloatingDescription(value.description)
    }

    fileprivate func writeFloat(_ value: Float) throws {
        guard value.isFinite else { throw FastJSONFallback() }
        writeFloatingDescription(value.description)
    }

    /// Swift's shortest round-trip form, without a trailing `.0`, as Foundation writes it.
    private func writeFloatingDescription(_ description: String) {
        var utf8 = description.utf8[...]
        if utf8.count >= 2, utf8.last == UInt8(ascii: "0"), utf8.dropLast().last == UInt8(ascii: ".") {
            utf8 = utf8.dropLast(2)
        }
        bytes.append(contentsOf: utf8)
    }

    fileprivate func writeString(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        var value = value
        value.withUTF8 { utf8 in
            var runStart = 0
            for index in 0..<utf8.count {
                let byte = utf8[index]
                guard
                    byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte == UInt8(ascii: "/")
                else { continue }
                if runStart < index { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index])) }
                runStart = index + 1
                bytes.append(UInt8(ascii: "\\"))
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): bytes.append(byte)
                case 0x08: bytes.append(UInt8(ascii: "b"))
                case 0x0C: bytes.append(UInt8(ascii: "f"))
                case 0x0A: bytes.append(UInt8(ascii: "n"))
                case 0x0D: bytes.append(UInt8(ascii: "r"))
                case 0x09: bytes.append(UInt8(ascii: "t"))
                default:
                    let hex: [UInt8] = Array("0123456789abcdef".utf8)
                    bytes.append(contentsOf: [UInt8(ascii: "u"), 0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
                    )
                }
            }
            if runStart < utf8.count { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...])) }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    // MARK: - containers

    /// Marks the current level as holding a container of `kind`; a second container for the same value fails.
    fileprivate func open(_ kind: ContainerKind) -> Int {
        guard let last = levels.indices.last, levels[last].kind == .none else {
            failed = true
            return -1
        }
        levels[last].kind = kind
        switch kind {
        case .keyed: bytes.append(UInt8(ascii: "{"))
        case .unkeyed: bytes.append(UInt8(ascii: "["))
        case .none, .single: break
        }
        return levels.count
    }

    /// Checks that a container of depth `depth` may write now, and writes the separator before its next element.
    fileprivate func beginElement(depth: Int) throws {
        guard !failed, depth == levels.count, let last = levels.indices.last else {
            failed = true
            throw FastJSONFallback()
        }
        if levels[last].count > 0 {
            if levels[last].kind == .single {
                failed = true
                throw FastJSONFallback()
            }
            bytes.append(UInt8(ascii: ","))
        }
        levels[last].count += 1
    }

    /// Writes `"key":` after checking it is new in the current object.
    fileprivate func writeKey(_ key: String) throws {
        guard let last = levels.indices.last else { throw FastJSONFallback() }
        let start = levels[last].keysStart
        if keys.count - start >= Self.maximumKeys || keys[start...].contains(key) {
            failed = true
            throw FastJSONFallback()
        }
        keys.append(key)
        writeString(key)
        bytes.append(UInt8(ascii: ":"))
    }
}

extension FastJSONEncoder: Encoder {
    var codingPath: [any CodingKey] { codingPathStorage }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(FastJSONKeyedEncodingContainer<Key>(encoder: self, depth: open(.keyed)))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        FastJSONUnkeyedEncodingContainer(encoder: self, depth: open(.unkeyed))
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        FastJSONSingleValueEncodingContainer(encoder: self, depth: open(.single))
    }

    /// Encodes a nested value under `key` in the coding path.
    fileprivate func encodeNested<T: Encodable>(_ value: T, key: any CodingKey) throws {
        codingPathStorage.append(key)
        defer { codingPathStorage.removeLast() }
        try encodeValue(value)
    }
}

private struct FastJSONKeyedEncodingContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let encoder: FastJSONEncoder
    let depth: Int
    var codingPath: [any CodingKey] { encoder.codingPath }

    private func element(_ key: Key) throws {
        try encoder.beginElement(depth: depth)
        try encoder.writeKey(key.stringValue)
    }

    mutating func encodeNil(forKey key: Key) throws {
        try element(key)
        encoder.writeNull()
    }
    mutating func encode(_ value: Bool, forKey key: Key) throws {
        try element(key)
        encoder.writeBool(value)
    }
    mutating func encode(_ value: String, forKey key: Key) throws {
        try element(key)
        encoder.writeString(value)
    }
    mutating func encode(_ value: Double, forKey key: Key) throws {
        try element(key)
        try encoder.writeDouble(value)
    }
    mutating func encode(_ value: Float, forKey key: Key) throws {
        try element(key)
        try encoder.writeFloat(value)
    }
    mutating func encode(_ value: Int, forKey key: Key) throws {
        try element(key)
        encoder.writeInteger(Int64(value))
    }
    mutating func encode(_ value: Int8, forKey key: Key) throws {
        try element(key)
        encoder.writeInteger(Int64(value))
    }
    mutating func encode(_ value: Int16, forKey key: Key) throws {
        try element(key)
        encoder.writeInteger(Int64(value))
    }
    mutating func encode(_ value: Int32, forKey key: Key) throws {
        try element(key)
        encoder.writeInteger(Int64(value))
    }
    mutating func encode(_ value: Int64, forKey key: Key) throws {
        try element(key)
        encoder.writeInteger(value)
    }
    mutating func encode(_ value: UInt, forKey key: Key) throws {
        try element(key)
        encoder.writeUnsigned(UInt64(value))
    }
    mutating func encode(_ value: UInt8, forKey key: Key) throws {
        try element(key)
        encoder.writeUnsigned(UInt64(value))
    }
    mutating func encode(_ value: UInt16, forKey key: Key) throws {
        try element(key)
        encoder.writeUnsigned(UInt64(value))
    }
    mutating func encode(_ value: UInt32, forKey key: Key) throws {
        try element(key)
        encoder.writeUnsigned(UInt64(value))
    }
    mutating func encode(_ value: UInt64, forKey key: Key) throws {
        try element(key)
        encoder.writeUnsigned(value)
    }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try element(key)
        try encoder.encodeNested(value, key: key)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        encoder.failed = true
        return KeyedEncodingContainer(FastJSONKeyedEncodingContainer<NestedKey>(encoder: encoder, depth: -1))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        encoder.failed = true
        return FastJSONUnkeyedEncodingContainer(encoder: encoder, depth: -1)
    }

    mutating func superEncoder() -> any Encoder {
        encoder.failed = true
        return encoder
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        encoder.failed = true
        return encoder
    }
}

private struct FastJSONUnkeyedEncodingContainer: UnkeyedEncodingContainer {
    let encoder: FastJSONEncoder
    let depth: Int
    private(set) var count = 0
    var codingPath: [any CodingKey] { encoder.codingPath }

    private mutating func element() throws {
        try encoder.beginElement(depth: depth)
        count += 1
    }

    mutating func encodeNil() throws {
        try element()
        encoder.writeNull()
    }
    mutating func encode(_ value: Bool) throws {
        try element()
        encoder.writeBool(value)
    }
    mutating func encode(_ value: String) throws {
        try element()
        encoder.writeString(value)
    }
    mutating func encode(_ value: Double) throws {
        try element()
        try encoder.writeDouble(value)
    }
    mutating func encode(_ value: Float) throws {
        try element()
        try encoder.writeFloat(value)
    }
    mutating func encode(_ value: Int) throws {
        try element()
        encoder.writeInteger(Int64(value))
    }
    mutating func encode(_ value: Int8) throws {
        try element()
        encoder.writeInteger(Int64(value))
    }
    mutating func encode(_ value: Int16) throws {
        try element()
        encoder.writeInteger(Int64(value))
    }
    mutating func encode(_ value: Int32) throws {
        try element()
        encoder.writeInteger(Int64(value))
    }
    mutating func encode(_ value: Int64) throws {
        try element()
        encoder.writeInteger(value)
    }
    mutating func encode(_ value: UInt) throws {
        try element()
        encoder.writeUnsigned(UInt64(value))
    }
    mutating func encode(_ value: UInt8) throws {
        try element()
        encoder.writeUnsigned(UInt64(value))
    }
    mutating func encode(_ value: UInt16) throws {
        try element()
        encoder.writeUnsigned(UInt64(value))
    }
    mutating func encode(_ value: UInt32) throws {
        try element()
        encoder.writeUnsigned(UInt64(value))
    }
    mutating func encode(_ value: UInt64) throws {
        try element()
        encoder.writeUnsigned(value)
    }

    mutating func encode<T: Encodable>(_ value: T) throws {
        try element()
        try encoder.encodeNested(value, key: FastJSONIndexKey(intValue: count - 1))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<
        NestedKey
    > {
        encoder.failed = true
        return KeyedEncodingContainer(FastJSONKeyedEncodingContainer<NestedKey>(encoder: encoder, depth: -1))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        encoder.failed = true
        return FastJSONUnkeyedEncodingContainer(encoder: encoder, depth: -1)
    }

    mutating func superEncoder() -> any Encoder {
        encoder.failed = true
        return encoder
    }
}

private struct FastJSONSingleValueEncodingContainer: SingleValueEncodingContainer {
    let encoder: FastJSONEncoder
    let depth: Int
    var codingPath: [any CodingKey] { encoder.codingPath }

    private func element() throws { try encoder.beginElement(depth: depth) }

    mutating func encodeNil() throws {
        try element()
        encoder.writeNull()
    }
    mutating func encode(_ value: Bool) throws {
        try element()
        encoder.writeBool(value)
    }
    mutating func encode(_ value: String) throws {
        try element()
        encoder.writeString(value)
    }
    mutating func encode(_ value: Double) throws {
        try element()
        try encoder.writeDouble(value)
    }
    mutating func encode(_ value: Float) throws {
        try element()
        try encoder.writeFloat(value)
    }
    mutating func encode(_ value: Int) throws {
        try element()
        encoder.writeInteger(Int64(value))
    }
    mutating func encode(_ value: Int8) throws {
        try element()
        encoder.writeInteger(Int64(value))
    }
    mutating func encode(_ value: Int16) throws {
        try element()
        encoder.writeInteger(Int64(value))
    }
    mutating func encode(_ value: Int32) throws {
        try element()
        encoder.writeInteger(Int64(value))
    }
    mutating func encode(_ value: Int64) throws {
        try element()
        encoder.writeInteger(value)
    }
    mutating func encode(_ value: UInt) throws {
        try element()
        encoder.writeUnsigned(UInt64(value))
    }
    mutating func encode(_ value: UInt8) throws {
        try element()
        encoder.writeUnsigned(UInt64(value))
    }
    mutating func encode(_ value: UInt16) throws {
        try element()
        encoder.writeUnsigned(UInt64(value))
    }
    mutating func encode(_ value: UInt32) throws {
        try element()
        encoder.writeUnsigned(UInt64(value))
    }
    mutating func encode(_ value: UInt64) throws {
        try element()
        encoder.writeUnsigned(value)
    }

    mutating func encode<T: Encodable>(_ value: T) throws {
        try element()
        try encoder.encodeValue(value)
    }
}

/// The coding key of an array element (for coding paths).
struct FastJSONIndexKey: CodingKey {
    var stringValue: String { "Index \(intValue ?? 0)" }
    var intValue: Int?
    init(intValue: Int) { self.intValue = intValue }
    init?(stringValue: String) { nil }
}
