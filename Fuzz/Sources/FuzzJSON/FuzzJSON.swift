// libFuzzer target: the JSON of a Codable message as a peer sends it, through JSONMessageCoder's fast path
// (FastJSONDecoder, FastJSONEncoder), differentially against Foundation's coders, whose answer the fast path must give
// whenever it gives one at all (it declines, and Foundation decodes, whatever it does not handle).
//
// Input layout: byte 0 picks the type decoded (mod 9: the test suite's shapes, Tests/ChirpTests/Support/
// JSONShapes.swift: Flat, Numbers, Optionals, Outer, top-level arrays, a string enum, a dictionary, a Date); the rest
// is the JSON document. Invariants beyond "no crash":
//   - when the fast decoder returns a value, Foundation's JSONDecoder decodes the same document to an equal one: the
//     fast path never accepts what Foundation refuses, nor reads a value differently;
//   - a value Foundation decoded, encoded by the fast encoder (unless it declines), is JSON that Foundation and the
//     fast decoder (unless it declines) both read back equal.
import Foundation

func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("invariant violated: \(message())") }
}

/// A string enum, alone and in an array.
struct WithLevel: Codable, Equatable {
    var level: JSONShapes.Level
    var levels: [JSONShapes.Level]
}

let foundationDecoder: JSONDecoder = {
    let decoder = JSONDecoder()
    decoder.dateDecodingStrategy = .iso8601  // JSONMessageCoder's default
    return decoder
}()

/// Checks both invariants for `document` decoded as `T`.
func check<T: Codable & Equatable>(_: T.Type, _ document: [UInt8]) {
    let fast = try? FastJSONDecoder(bytes: document).decode(T.self)
    let foundation = try? foundationDecoder.decode(T.self, from: Data(document))
    if let fast {
        require(foundation != nil, "the fast path accepted a document Foundation refuses, as \(T.self): \(fast)")
        require(fast == foundation, "the fast path read \(fast), Foundation \(foundation.map { "\($0)" } ?? "")")
    }
    guard let value = foundation, let encoded = try? FastJSONEncoder().encode(value) else { return }
    let back = try? foundationDecoder.decode(T.self, from: Data(encoded))
    require(
        back == value,
        "Foundation reads the fast encoder's \(String(decoding: encoded, as: UTF8.self)) as \(back.map { "\($0)" } ?? "an error"), not \(value)"
    )
    if let again = try? FastJSONDecoder(bytes: encoded).decode(T.self) {
        require(again == value, "the fast path reads its own \(String(decoding: encoded, as: UTF8.self)) as \(again)")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let document = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    switch data[0] % 9 {
    case 0: check(JSONShapes.Flat.self, document)
    case 1: check(JSONShapes.Numbers.self, document)
    case 2: check(JSONShapes.Optionals.self, document)
    case 3: check(JSONShapes.Outer.self, document)
    case 4: check([Int].self, document)
    case 5: check([String?].self, document)
    case 6: check(WithLevel.self, document)
    case 7: check([String: Int].self, document)
    default: check(JSONShapes.WithDate.self, document)
    }
    return 0
}
