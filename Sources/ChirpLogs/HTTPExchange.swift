import Foundation

/// One HTTP request and its response (or its error), as the app made it.
///
/// Report exchanges from any HTTP client with `LogSource.report(_:)`; URLSession traffic is captured with one line
/// (`logs.capturingHTTP(_:)`, in the `ChirpLogsURLSession` module). Before an exchange is stored, the source's ``HTTPLogPolicy`` redacts sensitive
/// headers and caps the bodies.
///
/// ```swift
/// var exchange = HTTPExchange(method: "GET", url: "https://api.example.com/items", startTime: start)
/// exchange.status = 200
/// exchange.duration = 0.012
/// exchange.responseBody = HTTPBody(data)
/// source.report(exchange)
/// ```
public struct HTTPExchange: Sendable, Equatable {
    /// The request method, e.g. `GET`.
    public var method: String
    /// The full URL.
    public var url: String
    /// Request headers, in order.
    public var requestHeaders: [HTTPHeader]
    /// The request body, if any (possibly capped; see ``HTTPBody/isTruncated``).
    public var requestBody: HTTPBody?
    /// The response status, `nil` when no response arrived.
    public var status: Int?
    /// Response headers, in order.
    public var responseHeaders: [HTTPHeader]
    /// The response body, if any (possibly capped).
    public var responseBody: HTTPBody?
    /// When the request started.
    public var startTime: Date
    /// Seconds from start to the end of the response (or the error).
    public var duration: Double
    /// The transport error, when the exchange failed without a response.
    public var error: String?

    /// Creates an exchange record.
    public init(
        method: String, url: String, requestHeaders: [HTTPHeader] = [], requestBody: HTTPBody? = nil,
        status: Int? = nil,
        responseHeaders: [HTTPHeader] = [], responseBody: HTTPBody? = nil, startTime: Date = Date(),
        duration: Double = 0,
        error: String? = nil
    ) {
        self.method = method
        self.url = url
        self.requestHeaders = requestHeaders
        self.requestBody = requestBody
        self.status = status
        self.responseHeaders = responseHeaders
        self.responseBody = responseBody
        self.startTime = startTime
        self.duration = duration
        self.error = error
    }

    /// How the exchange ended.
    public enum Outcome: Sendable, Equatable {
        /// A response with a status below 400.
        case success
        /// A response with status 400 or above, or a transport error.
        case failure
    }

    /// ``Outcome/success`` for a status below 400, otherwise ``Outcome/failure``.
    public var outcome: Outcome {
        if let status, status < 400, error == nil { return .success }
        return .failure
    }

    /// The URL's host, if it parses.
    public var host: String? { URLComponents(string: url)?.host }
    /// The URL's path, `/` when empty.
    public var path: String {
        let path = URLComponents(string: url)?.path ?? ""
        return path.isEmpty ? "/" : path
    }

    /// The value of the first request header named `name` (case-insensitive).
    public func requestHeader(_ name: String) -> String? {
        requestHeaders.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    /// The value of the first response header named `name` (case-insensitive).
    public func responseHeader(_ name: String) -> String? {
        responseHeaders.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    /// The one-line summary used as the record's message: `GET https://host/path -> 200 (12.3 ms)`.
    public var summary: String {
        let outcome: String
        if let status {
            outcome = "\(status)"
        } else {
            outcome = "failed: \(error ?? "no response")"
        }
        return "\(method) \(url) -> \(outcome) (\(Self.format(duration: duration)))"
    }

    /// `12.3 ms`, `1.24 s`, `850 µs`.
    public static func format(duration seconds: Double) -> String {
        if seconds >= 1 { return String(format: "%.2f s", seconds) }
        if seconds >= 0.001 { return String(format: "%.1f ms", seconds * 1000) }
        return String(format: "%.0f µs", max(0, seconds * 1_000_000))
    }
}

/// One HTTP header line.
public struct HTTPHeader: Sendable, Equatable {
    /// The header name as sent.
    public var name: String
    /// The value, or ``HTTPLogPolicy/redactedValue`` when redacted.
    public var value: String

    /// Creates a header.
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

/// A request or response body: its first bytes (up to the policy's cap) and its full size.
public struct HTTPBody: Sendable, Equatable {
    /// The bytes kept.
    public var data: Data
    /// The size of the whole body.
    public var totalBytes: Int
    /// Whether ``data`` is only the start of the body.
    public var isTruncated: Bool { totalBytes > data.count }

    /// A body of `data`; `totalBytes` defaults to its count.
    public init(_ data: Data, totalBytes: Int? = nil) {
        self.data = data
        self.totalBytes = max(totalBytes ?? data.count, data.count)
    }

    /// The body as text, when it is valid UTF-8.
    public var text: String? { String(data: data, encoding: .utf8) }
}
