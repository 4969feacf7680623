import ChirpSupport
import Foundation
import Logging

/// One JSON object per line (NDJSON) for `chirp logs --json`: records and viewer notices, each with an `event` field.
///
/// A record:
///
///     {"event":"record","seq":17,"time":"2026-11-22T03:10:51.123Z","level":"info","app":"orders","host":"box",
///      "pid":4242,"label":"orders.api","message":"order placed","metadata":{"id":"17"},"source":"Orders",
///      "file":"Orders/API.swift","function":"place()","line":42}
///
/// plus `"http":{...}` for an exchange (method, url, status, start, duration_ms, error, request/response with
/// `headers` as an object and `body` as text, or `body_base64` when not UTF-8, `body_bytes` and `truncated`).
/// Notices: `{"event":"lost","from":..,"through":..,"count":..,"reason":..,"app":..}`, `{"event":"following",...}`,
/// `{"event":"source-lost",...}`, `{"event":"history-complete",...}`. Non-ASCII text is written as UTF-8.
package enum LogJSON {
    /// The record as one line of JSON (no trailing newline).
    package static func line(for record: LogRecord) -> String {
        var json = JSONWriter()
        json.open()
        json.field("event", "record")
        json.field("seq", record.sequence)
        json.field("time", LogTime.iso8601(record.timestamp))
        json.field("level", record.level.rawValue)
        json.field("app", record.appName)
        json.field("host", record.host)
        json.field("pid", Int64(record.processID))
        json.field("label", record.label)
        json.field("message", record.message)
        json.key("metadata")
        json.metadata(record.metadata)
        json.field("source", record.source)
        json.field("file", record.file)
        json.field("function", record.function)
        json.field("line", UInt64(record.line))
        if let http = record.http {
            json.key("http")
            exchange(http, into: &json)
        }
        json.close()
        return json.text
    }

    /// A viewer notice as one line of JSON.
    package static func notice(_ event: String, source: LogSourceInfo, loss: LogLoss? = nil) -> String {
        var json = JSONWriter()
        json.open()
        json.field("event", event)
        json.field("app", source.appName)
        json.field("host", source.host)
        json.field("pid", Int64(source.processID))
        json.field("stream", source.streamID)
        if let loss {
            json.field("from", loss.from)
            json.field("through", loss.through)
            json.field("count", loss.count)
            json.field("reason", loss.reason)
        }
        json.close()
        return json.text
    }

    /// `{"event":"refused","source":..,"kind":..,"message":..}` (with `app`, `host`, `pid` when the source's
    /// advertisement was seen), for a source that refused the viewer.
    package static func refusal(_ refusal: LogSourceRefusal) -> String {
        var json = JSONWriter()
        json.open()
        json.field("event", "refused")
        json.field("source", refusal.source)
        if let info = refusal.info {
            json.field("app", info.appName)
            json.field("host", info.host)
            json.field("pid", Int64(info.processID))
        }
        let kind: String
        switch refusal.kind {
        case .secretRequired: kind = "secret-required"
        case .secretMismatch: kind = "secret-mismatch"
        case .sourceHasNoSecret: kind = "source-has-no-secret"
        case .notAccepted: kind = "not-accepted"
        case .other: kind = "other"
        }
        json.field("kind", kind)
        json.field("message", refusal.description)
        json.close()
        return json.text
    }

    static func exchange(_ exchange: HTTPExchange, into json: inout JSONWriter) {
        json.open()
        json.field("method", exchange.method)
        json.field("url", exchange.url)
        if let status = exchange.status { json.field("status", Int64(status)) }
        json.field("start", LogTime.iso8601(exchange.startTime))
        json.key("duration_ms")
        json.raw(String(format: "%.3f", exchange.duration * 1000))
        if let error = exchange.error { json.field("error", error) }
        json.key("request")
        message(headers: exchange.requestHeaders, body: exchange.requestBody, into: &json)
        json.key("response")
        message(headers: exchange.responseHeaders, body: exchange.responseBody, into: &json)
        json.close()
    }

    static func message(headers: [HTTPHeader], body: HTTPBody?, into json: inout JSONWriter) {
        json.open()
        json.key("headers")
        json.open()
        for header in headers { json.field(header.name, header.value) }
        json.close()
        if let body {
            if let text = body.text {
                json.field("body", text)
            } else {
                json.field("body_base64", body.data.base64EncodedString())
            }
            json.field("body_bytes", UInt64(body.totalBytes))
            json.key("truncated")
            json.raw(body.isTruncated ? "true" : "false")
        }
        json.close()
    }
}

/// A minimal streaming JSON writer over bytes: objects, strings (escaped, UTF-8 kept), numbers, metadata values.
struct JSONWriter {
    private var bytes: [UInt8] = []
    private var needsComma = [false]

    init() { bytes.reserveCapacity(512) }

    var text: String { String(decoding: bytes, as: UTF8.self) }

    mutating func open() {
        bytes.append(UInt8(ascii: "{"))
        needsComma.append(false)
    }

    mutating func close() {
        bytes.append(UInt8(ascii: "}"))
        needsComma.removeLast()
    }

    mutating func key(_ key: String) {
        if needsComma[needsComma.count - 1] { bytes.append(UInt8(ascii: ",")) }
        needsComma[needsComma.count - 1] = true
        string(key)
        bytes.append(UInt8(ascii: ":"))
    }

    mutating func field(_ name: String, _ value: String) {
        key(name)
        string(value)
    }

    mutating func field(_ name: String, _ value: UInt64) {
        key(name)
        raw(String(value))
    }

    mutating func field(_ name: String, _ value: Int64) {
        key(name)
        raw(String(value))
    }

    mutating func raw(_ value: String) {
        bytes.append(contentsOf: value.utf8)
    }

    mutating func metadata(_ metadata: Logger.Metadata) {
        open()
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            self.key(key)
            self.value(value)
        }
        close()
    }

    mutating func value(_ value: Logger.MetadataValue) {
        switch value {
        case .string(let string): self.string(string)
        case .stringConvertible(let convertible): string(convertible.description)
        case .dictionary(let dictionary): metadata(dictionary)
        case .array(let values):
            bytes.append(UInt8(ascii: "["))
            for (index, element) in values.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                self.value(element)
            }
            bytes.append(UInt8(ascii: "]"))
        }
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    mutating func string(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        var utf8 = value.utf8.makeIterator()
        var pending: [UInt8] = []
        while let byte = utf8.next() {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x0A: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0..<0x20:
                bytes.append(contentsOf: Array("\\u00".utf8))
                bytes.append(Self.hex[Int(byte >> 4)])
                bytes.append(Self.hex[Int(byte & 0xF)])
            case 0x7F:
                bytes.append(contentsOf: Array("\\u007f".utf8))
            case 0xC2, 0xE2:
                // Two- and three-byte sequences that a terminal or a JavaScript reader would act on: C1 controls
                // (C2 80-9F), the line and paragraph separators (E2 80 A8-A9) and the bidirectional overrides and
                // isolates (E2 80 AA-AE, E2 81 A6-A9). Escaped as \uXXXX, as UntrustedText would show them.
                pending = [byte]
                while pending.count < (byte == 0xC2 ? 2 : 3), let next = utf8.next() { pending.append(next) }
                if let scalar = Self.escapedScalar(pending) {
                    bytes.append(contentsOf: Array("\\u".utf8))
                    for shift in stride(from: 12, through: 0, by: -4) {
                        bytes.append(Self.hex[Int((scalar >> UInt32(shift)) & 0xF)])
                    }
                } else {
                    bytes.append(contentsOf: pending)
                }
            default:
                bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// The scalar a complete UTF-8 sequence encodes, when it is one that JSON lines escape beyond JSON's own rules.
    private static func escapedScalar(_ sequence: [UInt8]) -> UInt32? {
        guard let scalar = String(validating: sequence, as: UTF8.self)?.unicodeScalars.first, scalar.value >= 0x80,
            UntrustedText.needsEscape(scalar)
        else { return nil }
        return scalar.value
    }
}
