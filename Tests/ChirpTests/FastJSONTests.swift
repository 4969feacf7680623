import Foundation
import NIOCore
import NIOFoundationCompat
import Testing

@testable import Chirp
@testable import ChirpWire

/// The fast JSON path of `JSONMessageCoder` (FastJSONEncoder / FastJSONDecoder): what it writes is what Foundation's
/// `JSONEncoder` writes, what it reads it reads as Foundation's `JSONDecoder` does, and whatever it does not handle
/// goes to Foundation, errors included.
@Suite(.timeLimit(.minutes(5))) struct FastJSONTests {
    typealias Flat = JSONShapes.Flat
    typealias Numbers = JSONShapes.Numbers
    typealias Optionals = JSONShapes.Optionals
    typealias Inner = JSONShapes.Inner
    typealias Outer = JSONShapes.Outer
    typealias WithDate = JSONShapes.WithDate
    typealias Level = JSONShapes.Level

    struct WithData: Codable, Equatable {
        var id: Int
        var blob: Data
    }

    struct WithURL: Codable, Equatable {
        var id: Int
        var link: URL
    }

    struct WithDecimal: Codable, Equatable {
        var id: Int
        var amount: Decimal
    }

    enum Shape: Codable, Equatable {
        case circle(radius: Double)
        case square(side: Double)
    }

    struct WithEnums: Codable, Equatable {
        var level: Level
        var shape: Shape
    }

    class Base: Codable {
        var id = 1
    }

    final class Derived: Base, @unchecked Sendable {
        var extra = "x"
        private enum CodingKeys: String, CodingKey { case extra }
        override init() { super.init() }
        required init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            extra = try container.decode(String.self, forKey: .extra)
            try super.init(from: container.superDecoder())
        }
        override func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(extra, forKey: .extra)
            try super.encode(to: container.superEncoder())
        }
    }

    /// Encodes the same key twice.
    struct DuplicateKeys: Encodable {
        enum CodingKeys: String, CodingKey { case a }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(1, forKey: .a)
            try container.encode(2, forKey: .a)
        }
    }

    struct OnlyA: Codable, Equatable {
        var a: Int
    }

    // MARK: - helpers

    private let coder = JSONMessageCoder()

    private func chirpBytes<T: Encodable>(_ value: T) throws -> [UInt8] {
        var buffer = ByteBuffer()
        try coder.encode(value, into: &buffer)
        return buffer.readBytes(length: buffer.readableBytes) ?? []
    }

    private func foundationBytes<T: Encodable>(_ value: T) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        return Array(try encoder.encode(value))
    }

    private func foundationDecode<T: Decodable>(_ type: T.Type, _ bytes: [UInt8]) throws -> T {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(type, from: Data(bytes))
    }

    private func chirpDecode<T: Decodable>(_ type: T.Type, _ bytes: [UInt8]) throws -> T {
        try coder.decode(type, from: ByteBuffer(bytes: bytes))
    }

    /// `json` with its object keys sorted and its numbers and strings as JSONSerialization writes them: two
    /// documents with the same content have the same canonical form. (Foundation's `JSONEncoder` writes the keys of an
    /// object in the order of a dictionary, not in declaration order, so bytes alone cannot be compared.)
    private func canonical(_ json: [UInt8]) throws -> String {
        let object = try JSONSerialization.jsonObject(with: Data(json), options: .fragmentsAllowed)
        return String(
            decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .fragmentsAllowed]),
            as: UTF8.self)
    }

    private func canonical(_ json: String) throws -> String { try canonical(Array(json.utf8)) }

    /// The fast path handles `value`, writes the JSON Foundation writes (the same content), and both decoders read
    /// both outputs back.
    private func expectFastAndIdentical<T: Codable & Equatable>(
        _ value: T, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let fast = try FastJSONEncoder().encode(value)
        let foundation = try foundationBytes(value)
        #expect(try canonical(fast) == canonical(foundation), sourceLocation: sourceLocation)
        #expect(try chirpBytes(value) == fast, sourceLocation: sourceLocation)
        #expect(try FastJSONDecoder(bytes: fast).decode(T.self) == value, sourceLocation: sourceLocation)
        #expect(try foundationDecode(T.self, fast) == value, sourceLocation: sourceLocation)
        #expect(try chirpDecode(T.self, foundation) == value, sourceLocation: sourceLocation)
    }

    /// Decoding `json` as `T` gives what Foundation gives: the same value, or an error of the same kind.
    private func expectDecodesLikeFoundation<T: Decodable & Equatable>(
        _ type: T.Type, _ json: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let bytes = Array(json.utf8)
        let foundation = Result { try foundationDecode(type, bytes) }
        let chirp = Result { try chirpDecode(type, bytes) }
        switch (foundation, chirp) {
        case (.success(let expected), .success(let actual)):
            #expect(actual == expected, "\(json)", sourceLocation: sourceLocation)
        case (.failure(let expected), .failure(let actual)):
            #expect(
                String(describing: Swift.type(of: expected)) == String(describing: Swift.type(of: actual)), "\(json)",
                sourceLocation: sourceLocation)
            #expect(!(actual is FastJSONFallback), "\(json)", sourceLocation: sourceLocation)
        default:
            Issue.record("\(json): Foundation \(foundation), Chirp \(chirp)", sourceLocation: sourceLocation)
        }
    }

    // MARK: - the fast path

    @Test func flatStructIsFastAndIdentical() throws {
        try expectFastAndIdentical(Flat(seq: 100_042, from: "bench-main", text: "quick brown fox", urgent: false))
        try expectFastAndIdentical(Flat(seq: -1, from: "", text: "", urgent: true))
        // Keys in declaration order.
        let json = String(
            decoding: try FastJSONEncoder().encode(Flat(seq: 1, from: "a", text: "b", urgent: true)), as: UTF8.self)
        #expect(json == #"{"seq":1,"from":"a","text":"b","urgent":true}"#)
    }

    @Test func escapingMatchesFoundation() throws {
        for text in [
            "quote \" backslash \\ slash / done", "tab\tnewline\ncr\rbackspace\u{8}formfeed\u{C}",
            "</script>", "\\\\\"\"//"
        ] {
            try expectFastAndIdentical(Flat(seq: 1, from: text, text: text, urgent: false))
        }
        // Other control characters: valid JSON that both decoders read back (Foundation's hex case is its own).
        let control = Flat(seq: 1, from: "\u{0}\u{1}\u{1F}\u{7F}", text: "bell\u{7}", urgent: false)
        let fast = try FastJSONEncoder().encode(control)
        #expect(try foundationDecode(Flat.self, fast) == control)
        #expect(try FastJSONDecoder(bytes: fast).decode(Flat.self) == control)
        #expect(try chirpDecode(Flat.self, try foundationBytes(control)) == control)
    }

    @Test func unicodeMatchesFoundation() throws {
        for text in [
            "héllo wörld", "日本語のテキスト", "emoji 🐦🎉 and flags 🇫🇷", "e\u{301} combining", "\u{FEFF}bom", "\u{10FFFF}"
        ] {
            try expectFastAndIdentical(Flat(seq: 7, from: text, text: text, urgent: true))
        }
        // \u escapes, surrogate pairs included, read as Foundation reads them.
        expectDecodesLikeFoundation(
            Flat.self, #"{"seq":1,"from":"\u00e9\u65e5","text":"\ud83d\udc26 \u0041","urgent":false}"#)
        expectDecodesLikeFoundation(Flat.self, #"{"seq":1,"from":"\/\b\f\n\r\t\"\\","text":"","urgent":false}"#)
        // A lone surrogate, an unknown escape, invalid UTF-8, a raw control character: Foundation's verdict.
        expectDecodesLikeFoundation(Flat.self, #"{"seq":1,"from":"\ud83d","text":"","urgent":false}"#)
        expectDecodesLikeFoundation(Flat.self, #"{"seq":1,"from":"\udc26x","text":"","urgent":false}"#)
        expectDecodesLikeFoundation(Flat.self, #"{"seq":1,"from":"\x","text":"","urgent":false}"#)
        expectDecodesLikeFoundation(Flat.self, "{\"seq\":1,\"from\":\"a\tb\",\"text\":\"\",\"urgent\":false}")
        let invalidUTF8: [UInt8] =
            Array(#"{"seq":1,"from":""#.utf8) + [0xC3, 0x28] + Array(#"","text":"","urgent":false}"#.utf8)
        #expect(throws: (any Error).self) { try chirpDecode(Flat.self, invalidUTF8) }
        #expect(throws: (any Error).self) { try foundationDecode(Flat.self, invalidUTF8) }
    }

    @Test func integerExtremesMatchFoundation() throws {
        try expectFastAndIdentical(
            Numbers(
                int: .max, int8: .max, int16: .max, int32: .max, int64: .max, uint: .max, uint8: .max,
                uint16: .max, uint32: .max, uint64: .max, double: 1, float: 1))
        try expectFastAndIdentical(
            Numbers(
                int: .min, int8: .min, int16: .min, int32: .min, int64: .min, uint: 0, uint8: 0,
                uint16: 0, uint32: 0, uint64: 0, double: -1, float: -1))
        for json in [
            #"{"a":128}"#, #"{"a":-0}"#, #"{"a":1.0}"#, #"{"a":1e2}"#, #"{"a":9223372036854775808}"#,
            #"{"a":-9223372036854775809}"#, #"{"a":99999999999999999999999}"#, #"{"a":"1"}"#, #"{"a":01}"#,
            #"{"a":-}"#, #"{"a":+1}"#, #"{"a":true}"#, #"{"a":null}"#
        ] {
            expectDecodesLikeFoundation(OnlyA.self, json)
        }
        struct Small8: Codable, Equatable { var a: Int8 }
        struct Unsigned: Codable, Equatable { var a: UInt8 }
        for json in [#"{"a":127}"#, #"{"a":128}"#, #"{"a":-128}"#, #"{"a":-129}"#, #"{"a":-0}"#] {
            expectDecodesLikeFoundation(Small8.self, json)
            expectDecodesLikeFoundation(Unsigned.self, json)
        }
    }

    @Test func doublesMatchFoundation() throws {
        for value in [
            0.0, -0.0, 1.0, -1.5, 0.1, 1.0 / 3.0, 1e300, -1e-300, Double.leastNonzeroMagnitude,
            Double.greatestFiniteMagnitude,
            Double.leastNormalMagnitude, 123_456_789.0, 1e16, 1e-5, 4.35, Double(Int64.max)
        ] {
            try expectFastAndIdentical(
                Numbers(
                    int: 0, int8: 0, int16: 0, int32: 0, int64: 0, uint: 0, uint8: 0, uint16: 0,
                    uint32: 0, uint64: 0, double: value, float: Float(value).isFinite ? Float(value) : 1))
        }
        struct D: Codable, Equatable { var a: Double }
        for json in [
            #"{"a":1}"#, #"{"a":-0}"#, #"{"a":1E+2}"#, #"{"a":1e-400}"#, #"{"a":0.0e-400}"#, #"{"a":0e5}"#,
            #"{"a":-0E1}"#, #"{"a":0.5e1}"#, #"{"a":1e400}"#, #"{"a":.5}"#, #"{"a":5.}"#,
            // Zeros with an exponent: Foundation refuses some, accepts others (the first three from the fuzzer).
            #"{"a":0.00e10}"#, #"{"a":-0.0e1}"#, #"{"a":0.00e-1}"#, #"{"a":0.0e1}"#, #"{"a":0.0E+1}"#,
            #"{"a":NaN}"#, #"{"a":Infinity}"#, #"{"a":0x10}"#, #"{"a":"1.5"}"#
        ] {
            expectDecodesLikeFoundation(D.self, json)
        }
        struct F: Codable, Equatable { var a: Float }
        for json in [
            #"{"a":0.1}"#, #"{"a":3.4e38}"#, #"{"a":3.5e38}"#, #"{"a":16777217}"#, #"{"a":1e-50}"#, #"{"a":0e5}"#,
            #"{"a":-0.0}"#
        ] {
            expectDecodesLikeFoundation(F.self, json)
        }
    }

    @Test func nonFiniteFloatsThrowAsInFoundation() {
        struct D: Codable { var a: Double }
        struct F: Codable { var a: Float }
        for value in [Double.nan, .infinity, -.infinity] {
            #expect(throws: EncodingError.self) { try chirpBytes(D(a: value)) }
            #expect(throws: EncodingError.self) { try foundationBytes(D(a: value)) }
            #expect(throws: EncodingError.self) { try chirpBytes(F(a: Float(value))) }
        }
    }

    @Test func optionalsMatchFoundation() throws {
        try expectFastAndIdentical(Optionals(name: nil, count: nil, flag: nil, values: nil))
        try expectFastAndIdentical(Optionals(name: "n", count: 0, flag: false, values: []))
        try expectFastAndIdentical(Optionals(name: nil, count: 3, flag: nil, values: [1, 2]))
        #expect(
            String(
                decoding: try FastJSONEncoder().encode(Optionals(name: nil, count: 3, flag: nil, values: nil)),
                as: UTF8.self)
                == #"{"count":3}"#)
        expectDecodesLikeFoundation(Optionals.self, #"{"name":null,"count":null,"flag":null,"values":null}"#)
        expectDecodesLikeFoundation(Optionals.self, #"{}"#)
        expectDecodesLikeFoundation(Optionals.self, #"{"values":[1,null]}"#)
        expectDecodesLikeFoundation(Optionals.self, #"{"count":"3"}"#)
    }

    @Test func nestedValuesAndArraysMatchFoundation() throws {
        let inner = Inner(id: 1, tags: ["a", "b/c"])
        try expectFastAndIdentical(
            Outer(
                inner: inner, list: [inner, Inner(id: 2, tags: [])], matrix: [[1.5, 2], [], [-3]],
                optionalInner: nil, maybes: [1, nil, 3]))
        try expectFastAndIdentical(Outer(inner: inner, list: [], matrix: [], optionalInner: inner, maybes: []))
        try expectFastAndIdentical(WithEnums(level: .high, shape: .circle(radius: 1)).level)
        try expectFastAndIdentical([1, 2, 3])
        try expectFastAndIdentical("a top-level string")
        try expectFastAndIdentical(["k": 1])
        expectDecodesLikeFoundation(
            Outer.self,
            #" { "inner" : { "id" : 1 , "tags" : [ ] } , "list" : [ ] , "matrix" : [ [ 1 ] ] , "maybes" : [ null ] } "#)
        expectDecodesLikeFoundation(
            Outer.self,
            #"{"inner":{"id":1,"tags":[]},"list":[],"matrix":[[1]],"maybes":[null],"extra":{"x":[1,{"y":null}]}}"#)
    }

    // MARK: - what goes to Foundation

    @Test func foundationSpecialTypesFallBack() throws {
        let date = WithDate(id: 1, at: Date(timeIntervalSince1970: 1_700_000_000))
        let data = WithData(id: 2, blob: Data([0, 1, 2, 255]))
        let url = WithURL(id: 3, link: URL(string: "https://example.com/a?b=c")!)
        let decimal = WithDecimal(id: 4, amount: Decimal(string: "12.345")!)
        #expect(throws: FastJSONFallback.self) { try FastJSONEncoder().encode(date) }
        #expect(throws: FastJSONFallback.self) { try FastJSONEncoder().encode(data) }
        #expect(throws: FastJSONFallback.self) { try FastJSONEncoder().encode(url) }
        #expect(throws: FastJSONFallback.self) { try FastJSONEncoder().encode(decimal) }
        #expect(try canonical(chirpBytes(date)) == canonical(foundationBytes(date)))
        #expect(try canonical(chirpBytes(data)) == canonical(foundationBytes(data)))
        #expect(try canonical(chirpBytes(url)) == canonical(foundationBytes(url)))
        #expect(try canonical(chirpBytes(decimal)) == canonical(foundationBytes(decimal)))
        #expect(try chirpDecode(WithDate.self, foundationBytes(date)) == date)
        #expect(try chirpDecode(WithData.self, foundationBytes(data)) == data)
        #expect(try chirpDecode(WithURL.self, foundationBytes(url)) == url)
        #expect(try chirpDecode(WithDecimal.self, foundationBytes(decimal)) == decimal)
        #expect(throws: FastJSONFallback.self) {
            try FastJSONDecoder(bytes: foundationBytes(date)).decode(WithDate.self)
        }
        // The coder's date strategy still applies.
        let seconds = JSONMessageCoder(dateStrategy: .secondsSince1970)
        var buffer = ByteBuffer()
        try seconds.encode(date, into: &buffer)
        #expect(try canonical(String(buffer: buffer)) == canonical(#"{"id":1,"at":1700000000}"#))
        #expect(try seconds.decode(WithDate.self, from: buffer) == date)
    }

    @Test func nestedContainersAndSuperEncodersFallBack() throws {
        let enums = WithEnums(level: .low, shape: .square(side: 2.5))
        #expect(throws: FastJSONFallback.self) { try FastJSONEncoder().encode(enums) }
        #expect(try canonical(chirpBytes(enums)) == canonical(foundationBytes(enums)))
        #expect(try chirpDecode(WithEnums.self, foundationBytes(enums)) == enums)
        #expect(throws: FastJSONFallback.self) {
            try FastJSONDecoder(bytes: foundationBytes(enums)).decode(WithEnums.self)
        }

        let derived = Derived()
        derived.id = 9
        #expect(throws: FastJSONFallback.self) { try FastJSONEncoder().encode(derived) }
        #expect(try canonical(chirpBytes(derived)) == canonical(foundationBytes(derived)))
        let decoded = try chirpDecode(Derived.self, foundationBytes(derived))
        #expect(decoded.id == 9 && decoded.extra == "x")
    }

    @Test func duplicateAndManyKeysFallBack() throws {
        #expect(throws: FastJSONFallback.self) { try FastJSONEncoder().encode(DuplicateKeys()) }
        #expect(try canonical(chirpBytes(DuplicateKeys())) == canonical(foundationBytes(DuplicateKeys())))
        expectDecodesLikeFoundation(OnlyA.self, #"{"a":1,"a":2}"#)
        expectDecodesLikeFoundation(OnlyA.self, #"{"\u0061":5}"#)

        var many: [String: Int] = [:]
        for index in 0..<(FastJSONEncoder.maximumKeys + 8) { many["key\(index)"] = index }
        #expect(throws: FastJSONFallback.self) { try FastJSONEncoder().encode(many) }
        #expect(try foundationDecode([String: Int].self, chirpBytes(many)) == many)
        #expect(try chirpDecode([String: Int].self, foundationBytes(many)) == many)
        let few = ["a": 1, "bc": 2, "é": 3]
        #expect(try foundationDecode([String: Int].self, FastJSONEncoder().encode(few)) == few)
        #expect(try FastJSONDecoder(bytes: foundationBytes(few)).decode([String: Int].self) == few)
        // An escaped key ("b\/c" as Foundation writes "b/c") is Foundation's to read.
        let escaped = ["b/c": 1, "d\"e": 2]
        #expect(throws: FastJSONFallback.self) {
            try FastJSONDecoder(bytes: foundationBytes(escaped)).decode([String: Int].self)
        }
        #expect(try chirpDecode([String: Int].self, foundationBytes(escaped)) == escaped)
        #expect(try foundationDecode([String: Int].self, chirpBytes(escaped)) == escaped)
    }

    @Test func malformedInputFailsAsInFoundation() {
        for json in [
            "", " ", "{", "}", #"{"seq":1"#, #"{"seq":1,}"#, #"{"seq" 1}"#, #"{seq:1}"#, #"{'seq':1}"#, "[1,2]",
            #"{"seq":1,"from":"a","text":"b","urgent":false} x"#, #"{"seq":1,"from":"a","text":"b","urgent":tru}"#,
            #"{"seq":1,"from":"a","text":"b"}"#, #"{"seq":1,"from":2,"text":"b","urgent":false}"#, "null",
            #"{"seq":1,"from":"a","text":"b","urgent":false,}"#
        ] {
            expectDecodesLikeFoundation(Flat.self, json)
        }
        // Bad escapes in a value the type does not read (found by the json fuzz target): Foundation refuses the
        // document, so the fast path must not accept it.
        for escape in [#"\ud83`"#, #"\ur"#, #"\x"#, #"\u12"#, #"\ud83d"#, #"\ud83d\u0041"#, #"\udc00"#] {
            expectDecodesLikeFoundation(
                Flat.self, #"{"s":"a\#(escape)b","seq":1,"from":"a","text":"b","urgent":false}"#)
        }
        // Deep nesting is Foundation's to judge.
        let deep = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        #expect(throws: FastJSONFallback.self) { try FastJSONDecoder(bytes: Array(deep.utf8)).decode([[[Int]]].self) }
    }

    @Test func encodesIntoTheEndOfTheBuffer() throws {
        var buffer = ByteBuffer(string: "prefix")
        try coder.encode(Flat(seq: 1, from: "a", text: "b", urgent: true), into: &buffer)
        #expect(String(buffer: buffer) == #"prefix{"seq":1,"from":"a","text":"b","urgent":true}"#)
        // A value that falls back half-way leaves nothing of the fast attempt behind.
        var second = ByteBuffer(string: "p")
        try coder.encode(WithDate(id: 1, at: Date(timeIntervalSince1970: 0)), into: &second)
        #expect(second.readString(length: 1) == "p")
        #expect(try canonical(String(buffer: second)) == canonical(#"{"id":1,"at":"1970-01-01T00:00:00Z"}"#))
    }
}
