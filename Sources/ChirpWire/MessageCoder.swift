import Foundation
import NIOCore
import NIOFoundationCompat

/// Turns message values into payload bytes and back.
///
/// Chirp encodes each message once, whatever the number of receivers, with the transceiver's coder. The default,
/// ``JSONMessageCoder``, keeps the wire readable from any language. `Data` values skip the coder: they travel as raw
/// bytes with the binary flag set (see `Docs/Protocol.md`).
///
/// Implementations must be safe to call from several threads at once.
public protocol MessageCoder: Sendable {
    /// Appends the encoded form of `value` to `buffer`.
    func encode<T: Encodable>(_ value: T, into buffer: inout ByteBuffer) throws
    /// Decodes a value of `type` from all readable bytes of `buffer`.
    func decode<T: Decodable>(_ type: T.Type, from buffer: ByteBuffer) throws -> T
}

/// The default ``MessageCoder``: JSON. Small flat structs go through a fast path that writes and reads the bytes
/// directly; everything else (dates, data, URLs, decimals, nested containers, ...) through Foundation's
/// `JSONEncoder` / `JSONDecoder`, created once and reused. Either way the JSON is the same and Foundation decodes it
/// identically.
///
/// ```swift
/// var configuration = Configuration(serviceType: "chat")
/// configuration.coder = JSONMessageCoder(dateStrategy: .iso8601)
/// ```
public struct JSONMessageCoder: MessageCoder {
    private let encoder: JSONEncoder
    private let decoder: JSONDecoder

    /// How dates are written; ISO 8601 by default so peers in other languages can read them.
    public enum DateStrategy: Sendable {
        /// ISO 8601 strings such as `2026-11-22T03:10:51Z`.
        case iso8601
        /// Seconds since 1970 as a JSON number.
        case secondsSince1970
    }

    /// Creates a JSON coder.
    /// - Parameter dateStrategy: how `Date` values are encoded and decoded; `.iso8601` by default.
    public init(dateStrategy: DateStrategy = .iso8601) {
        let encoder = JSONEncoder()
        let decoder = JSONDecoder()
        switch dateStrategy {
        case .iso8601:
            encoder.dateEncodingStrategy = .iso8601
            decoder.dateDecodingStrategy = .iso8601
        case .secondsSince1970:
            encoder.dateEncodingStrategy = .secondsSince1970
            decoder.dateDecodingStrategy = .secondsSince1970
        }
        self.encoder = encoder
        self.decoder = decoder
    }

    /// Encodes small structs of strings, numbers, booleans, optionals and arrays directly (`FastJSONEncoder`);
    /// anything else, and any value the fast path declines, with Foundation's `JSONEncoder`. Both write the same JSON.
    public func encode<T: Encodable>(_ value: T, into buffer: inout ByteBuffer) throws {
        // This thread's encoder writes the bytes straight after the frame header (no allocation once warm).
        if (try? CodingScratch.forThisThread.availableEncoder.encode(value, into: &buffer)) != nil { return }
        try buffer.writeJSONEncodable(value, encoder: encoder)
    }

    /// Decodes with the fast path (`FastJSONDecoder`) and, when it declines (an unsupported type or shape, or any
    /// error), again with Foundation's `JSONDecoder`, whose result or error is then the answer.
    public func decode<T: Decodable>(_ type: T.Type, from buffer: ByteBuffer) throws -> T {
        // Read in place from the received bytes by this thread's decoder (no copy, no allocation once warm).
        let fastDecoder = CodingScratch.forThisThread.availableDecoder
        let fast = buffer.withUnsafeReadableBytes { raw in
            raw.withMemoryRebound(to: UInt8.self) { try? fastDecoder.decode(type, from: $0) }
        }
        if let fast { return fast }
        return try decoder.decode(type, from: buffer)
    }
}
