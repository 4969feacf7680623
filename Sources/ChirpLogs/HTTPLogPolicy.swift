import Foundation
import Logging

/// What the app lets into its HTTP log: whether capture is on, which hosts and paths, which exchanges, what is redacted
/// and how much of each body is kept. Applied before an exchange is stored, so a redacted value never reaches memory
/// buffers, the spool or the network.
///
/// ```swift
/// var policy = HTTPLogPolicy()
/// policy.redactedHeaders.insert("x-api-key")
/// policy.allowList = [HTTPAllowRule(host: "api.example.com", pathPrefix: "/v2/")]
/// policy.filter = { exchange in exchange.path != "/health" }
/// source.httpPolicy = policy
/// ```
public struct HTTPLogPolicy: Sendable {
    /// What redacted header values are replaced with.
    public static let redactedValue = "<redacted>"

    /// Headers redacted by default: `authorization`, `cookie`, `set-cookie`, `proxy-authorization`.
    public static let defaultRedactedHeaders: Set<String> = [
        "authorization", "cookie", "set-cookie", "proxy-authorization"
    ]

    /// Whether exchanges are recorded at all; switch it at any time with ``LogSource/isHTTPCaptureEnabled``.
    /// Default: `true` (nothing is captured until the app opts in with a capturing session or reports exchanges).
    public var isEnabled = true
    /// Header names (case-insensitive) whose values are replaced by ``redactedValue``. Default:
    /// ``defaultRedactedHeaders``; add your own (`x-api-key`, ...).
    public var redactedHeaders: Set<String> = HTTPLogPolicy.defaultRedactedHeaders
    /// Bytes kept of each request and response body; the rest is dropped and the full size noted. Default: 64 KiB.
    public var maximumBodyBytes = 64 * 1024
    /// When not empty, only exchanges matching one of these rules are recorded. Default: empty (every exchange).
    public var allowList: [HTTPAllowRule] = []
    /// A last word on each exchange (after the allow-list, before redaction): return `false` to leave it out.
    /// Default: `nil` (keep all).
    public var filter: (@Sendable (HTTPExchange) -> Bool)?
    /// The label of the records that carry exchanges. Default: `http`.
    public var label = "http"

    /// A policy with the defaults above.
    public init() {}

    /// Whether `exchange` is to be recorded.
    public func admits(_ exchange: HTTPExchange) -> Bool {
        guard isEnabled else { return false }
        if !allowList.isEmpty {
            let host = exchange.host ?? ""
            let path = exchange.path
            guard allowList.contains(where: { $0.matches(host: host, path: path) }) else { return false }
        }
        if let filter, !filter(exchange) { return false }
        return true
    }

    /// `exchange` with sensitive header values redacted and bodies capped.
    public func sanitized(_ exchange: HTTPExchange) -> HTTPExchange {
        var exchange = exchange
        let redacted = Set(redactedHeaders.map { $0.lowercased() })
        exchange.requestHeaders = exchange.requestHeaders.map { redact($0, redacted) }
        exchange.responseHeaders = exchange.responseHeaders.map { redact($0, redacted) }
        exchange.requestBody = exchange.requestBody.map(cap)
        exchange.responseBody = exchange.responseBody.map(cap)
        return exchange
    }

    /// The level an exchange is logged at: info below 400, warning for 4xx, error for 5xx and transport errors.
    public static func level(of exchange: HTTPExchange) -> Logger.Level {
        guard let status = exchange.status, exchange.error == nil else { return .error }
        if status >= 500 { return .error }
        if status >= 400 { return .warning }
        return .info
    }

    private func redact(_ header: HTTPHeader, _ names: Set<String>) -> HTTPHeader {
        guard names.contains(header.name.lowercased()) else { return header }
        return HTTPHeader(name: header.name, value: Self.redactedValue)
    }

    private func cap(_ body: HTTPBody) -> HTTPBody {
        let limit = max(0, maximumBodyBytes)
        guard body.data.count > limit else { return body }
        var kept = Data(body.data.prefix(limit))
        // Do not cut a UTF-8 character in half: drop a trailing partial sequence (at most 3 bytes).
        if String(data: kept, encoding: .utf8) == nil {
            for _ in 0..<3 where !kept.isEmpty {
                kept.removeLast()
                if String(data: kept, encoding: .utf8) != nil { break }
            }
            if String(data: kept, encoding: .utf8) == nil { kept = Data(body.data.prefix(limit)) }
        }
        return HTTPBody(kept, totalBytes: body.totalBytes)
    }
}

/// One entry of ``HTTPLogPolicy/allowList``: a host (exact, or `*.example.com` for subdomains) and an optional path
/// prefix.
public struct HTTPAllowRule: Sendable, Equatable {
    /// `api.example.com`, `*.example.com`, or `*` for any host.
    public var host: String
    /// Only paths starting with this, e.g. `/v2/`; `nil` for any path.
    public var pathPrefix: String?

    /// Creates a rule.
    public init(host: String, pathPrefix: String? = nil) {
        self.host = host
        self.pathPrefix = pathPrefix
    }

    /// Whether an exchange with this host and path matches.
    public func matches(host candidate: String, path: String) -> Bool {
        let pattern = host.lowercased()
        let candidate = candidate.lowercased()
        let hostMatches: Bool
        if pattern == "*" {
            hostMatches = true
        } else if pattern.hasPrefix("*.") {
            let suffix = String(pattern.dropFirst(1))
            hostMatches = candidate.hasSuffix(suffix) || candidate == String(pattern.dropFirst(2))
        } else {
            hostMatches = candidate == pattern
        }
        guard hostMatches else { return false }
        if let pathPrefix { return path.hasPrefix(pathPrefix) }
        return true
    }
}
