import Foundation

// The message shapes that JSONMessageCoder's fast path is checked with: by FastJSONTests, and by the json fuzz target
// (Fuzz/Sources/FuzzJSON), which compiles this file through a symlink. Foundation only, so that both can.

/// Codable shapes of small messages: every case the fast path handles, and a `Date`, which it leaves to Foundation.
enum JSONShapes {
    struct Flat: Codable, Equatable {
        var seq: Int
        var from: String
        var text: String
        var urgent: Bool
    }

    struct Numbers: Codable, Equatable {
        var int: Int
        var int8: Int8
        var int16: Int16
        var int32: Int32
        var int64: Int64
        var uint: UInt
        var uint8: UInt8
        var uint16: UInt16
        var uint32: UInt32
        var uint64: UInt64
        var double: Double
        var float: Float
    }

    struct Optionals: Codable, Equatable {
        var name: String?
        var count: Int?
        var flag: Bool?
        var values: [Int]?
    }

    struct Inner: Codable, Equatable {
        var id: Int
        var tags: [String]
    }

    struct Outer: Codable, Equatable {
        var inner: Inner
        var list: [Inner]
        var matrix: [[Double]]
        var optionalInner: Inner?
        var maybes: [Int?]
    }

    struct WithDate: Codable, Equatable {
        var id: Int
        var at: Date
    }

    enum Level: String, Codable, Equatable {
        case low, high
    }
}
