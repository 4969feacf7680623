import ChirpLogs
import Foundation
import Logging

/// A log record as the console stores and serves it: the record, the stream it came from and the id the store gave
/// it (ids grow with arrival, across all sources; the API pages by them).
public struct ConsoleRecord: Sendable, Equatable {
    /// The store's id: larger ids arrived later.
    public var id: Int64
    /// The stream (one run of one source) the record belongs to.
    public var stream: String
    /// The record.
    public var record: LogRecord

    /// A stored record.
    public init(id: Int64, stream: String, record: LogRecord) {
        self.id = id
        self.stream = stream
        self.record = record
    }
}

/// Log levels as the store keeps them: a rank, so that "at least warning" is a comparison.
enum LevelRank {
    static let ordered: [Logger.Level] = [.trace, .debug, .info, .notice, .warning, .error, .critical]

    static func rank(_ level: Logger.Level) -> Int { ordered.firstIndex(of: level) ?? 2 }

    static func level(_ rank: Int) -> Logger.Level { ordered.indices.contains(rank) ? ordered[rank] : .info }

    /// The level named `name` (`trace` ... `critical`, any case), or `nil`.
    static func parse(_ name: String) -> Logger.Level? { Logger.Level(rawValue: name.lowercased()) }
}

/// A JSON value, for metadata and for the API's documents.
enum JSONValue: Sendable, Equatable, Codable {
    case string(String)
    case number(Double)
    case bool(Bool)
    case null
    case array([JSONValue])
    case object([String: JSONValue])

    init(_ metadata: Logger.MetadataValue) {
        switch metadata {
        case .string(let text): self = .string(text)
        case .stringConvertible(let value): self = .string(value.description)
        case .array(let values): self = .array(values.map(JSONValue.init))
        case .dictionary(let entries): self = .object(entries.mapValues(JSONValue.init))
        }
    }

    static func metadata(_ metadata: Logger.Metadata) -> JSONValue { .object(metadata.mapValues(JSONValue.init)) }

    /// Back to swift-log's metadata (numbers and booleans as their text).
    var metadataValue: Logger.MetadataValue {
        switch self {
        case .string(let text): return .string(text)
        case .number(let number): return .string(number.rounded() == number ? String(Int64(number)) : String(number))
        case .bool(let flag): return .string(flag ? "true" : "false")
        case .null: return .string("null")
        case .array(let values): return .array(values.map(\.metadataValue))
        case .object(let entries): return .dictionary(entries.mapValues(\.metadataValue))
        }
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let flag = try? container.decode(Bool.self) {
            self = .bool(flag)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let text = try? container.decode(String.self) {
            self = .string(text)
        } else if let values = try? container.decode([JSONValue].self) {
            self = .array(values)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let text): try container.encode(text)
        case .number(let number): try container.encode(number)
        case .bool(let flag): try container.encode(flag)
        case .null: try container.encodeNil()
        case .array(let values): try container.encode(values)
        case .object(let entries): try container.encode(entries)
        }
    }
}

/// An HTTP exchange as the store keeps it (JSON in the `http` column) and the API serves it.
struct StoredExchange: Codable, Sendable, Equatable {
    var method: String
    var url: String
    var host: String?
    var path: String
    var status: Int?
    var duration: Double
    var startTime: Double
    var error: String?
    var requestHeaders: [[String]]
    var responseHeaders: [[String]]
    var requestBody: String?
    var requestBodyBytes: Int?
    var requestBodyTruncated: Bool
    var requestBodyBase64: Bool
    var responseBody: String?
    var responseBodyBytes: Int?
    var responseBodyTruncated: Bool
    var responseBodyBase64: Bool

    init(_ exchange: HTTPExchange) {
        method = exchange.method
        url = exchange.url
        host = URLComponents(string: exchange.url).flatMap { components in
            components.host.map { host in components.port.map { "\(host):\($0)" } ?? host }
        }
        path = exchange.path
        status = exchange.status
        duration = exchange.duration
        startTime = exchange.startTime.timeIntervalSince1970
        error = exchange.error
        requestHeaders = exchange.requestHeaders.map { [$0.name, $0.value] }
        responseHeaders = exchange.responseHeaders.map { [$0.name, $0.value] }
        (requestBody, requestBodyBase64) = Self.text(of: exchange.requestBody)
        requestBodyBytes = exchange.requestBody?.totalBytes
        requestBodyTruncated = exchange.requestBody?.isTruncated ?? false
        (responseBody, responseBodyBase64) = Self.text(of: exchange.responseBody)
        responseBodyBytes = exchange.responseBody?.totalBytes
        responseBodyTruncated = exchange.responseBody?.isTruncated ?? false
    }

    /// A body as text: UTF-8 as it is, anything else in base64 (said so).
    private static func text(of body: HTTPBody?) -> (String?, Bool) {
        guard let body else { return (nil, false) }
        if let text = String(data: body.data, encoding: .utf8) { return (text, false) }
        return (body.data.base64EncodedString(), true)
    }

    /// Back to the log channel's type.
    var exchange: HTTPExchange {
        func body(_ text: String?, base64: Bool, total: Int?) -> HTTPBody? {
            guard let text else { return nil }
            let data = base64 ? (Data(base64Encoded: text) ?? Data()) : Data(text.utf8)
            return HTTPBody(data, totalBytes: total)
        }
        return HTTPExchange(
            method: method, url: url,
            requestHeaders: requestHeaders.compactMap { $0.count == 2 ? HTTPHeader(name: $0[0], value: $0[1]) : nil },
            requestBody: body(requestBody, base64: requestBodyBase64, total: requestBodyBytes),
            status: status,
            responseHeaders: responseHeaders.compactMap { $0.count == 2 ? HTTPHeader(name: $0[0], value: $0[1]) : nil },
            responseBody: body(responseBody, base64: responseBodyBase64, total: responseBodyBytes),
            startTime: Date(timeIntervalSince1970: startTime), duration: duration, error: error)
    }
}
