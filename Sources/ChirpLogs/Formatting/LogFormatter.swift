import Foundation
import Logging

/// Turns records into the lines `chirp logs` prints: one line per record, one line per HTTP exchange (`--http`),
/// or a full exchange (`--http --detail`). Pure functions of their input, so they are easy to test.
///
/// ```swift
/// let formatter = LogFormatter(useColor: false)
/// print(formatter.line(for: record))
/// // 12:04:31.118 info     orders[4242] orders.api: order placed id=17
/// ```
package struct LogFormatter: Sendable {
    /// Whether to emit ANSI colours.
    package var useColor: Bool
    /// Matches to highlight (`--grep`).
    package var highlight: LogPattern?
    /// Show the host after the app (`orders[4242]@box`), useful when sources run on several hosts.
    package var showHost = false
    /// With ``showHost``: the host not worth naming (this machine).
    package var localHost: String?

    /// A formatter.
    package init(useColor: Bool, highlight: LogPattern? = nil, showHost: Bool = false, localHost: String? = nil) {
        self.useColor = useColor
        self.highlight = highlight
        self.showHost = showHost
        self.localHost = localHost
    }

    /// `time level app[pid] label: message key=value ...`
    package func line(for record: LogRecord) -> String {
        let levelStyle = TextStyle.of(record.level)
        let dimAll = levelStyle == .dim
        var text = StyledText(useColor: useColor)
        text.field(LogTime.clock(record.timestamp), .dim)
        text.field(Self.pad(record.level.rawValue, 8), levelStyle == .plain ? .bold : levelStyle)
        text.field(origin(record), dimAll ? .dim : .cyan)
        text.field(record.label + ":", .dim)
        text.field(record.message, levelStyle, highlighting: highlight)
        let metadata = Self.render(record.metadata, skippingHTTPKeys: record.http != nil)
        if !metadata.isEmpty { text.field(metadata, .dim, highlighting: highlight) }
        return text.text
    }

    /// The API view: `time app[pid] METHOD status duration URL`, or `nil` for a record without an exchange.
    package func httpLine(for record: LogRecord) -> String? {
        guard let exchange = record.http else { return nil }
        var text = StyledText(useColor: useColor)
        text.field(LogTime.clock(exchange.startTime), .dim)
        text.field(origin(record), .dim)
        text.field(Self.pad(exchange.method, 6), .cyan)
        text.field(exchange.status.map { String($0) } ?? "ERR", TextStyle.of(exchange.outcome))
        text.field(Self.pad(HTTPExchange.format(duration: exchange.duration), 9, right: true))
        text.field(exchange.url, .plain, highlighting: highlight)
        if let error = exchange.error { text.field(error, .red, highlighting: highlight) }
        return text.text
    }

    /// The whole exchange in the style of `curl -v`: request line and headers (`>`), the body pretty-printed when
    /// it is JSON, then the status and headers of the response (`<`) and its body. `nil` without an exchange.
    package func httpDetail(for record: LogRecord) -> String? {
        guard let exchange = record.http else { return nil }
        var text = StyledText(useColor: useColor)
        text.append("── " + LogTime.clock(exchange.startTime) + " " + origin(record) + " ", .dim)
        text.append(HTTPExchange.format(duration: exchange.duration), .dim)
        text.append("\n")
        text.append("> ", .cyan)
        text.append(exchange.method + " " + exchange.url, .cyan, highlighting: highlight)
        text.append("\n")
        for header in exchange.requestHeaders {
            text.append("> ", .cyan)
            text.append(header.name + ": ", .bold)
            text.append(header.value, header.value == HTTPLogPolicy.redactedValue ? .magenta : .plain)
            text.append("\n")
        }
        appendBody(exchange.requestBody, contentType: exchange.requestHeader("content-type"), to: &text)
        let outcome = TextStyle.of(exchange.outcome)
        if let status = exchange.status {
            text.append("< ", outcome)
            text.append("\(status) \(Self.reason(status))", outcome)
            text.append("\n")
            for header in exchange.responseHeaders {
                text.append("< ", outcome)
                text.append(header.name + ": ", .bold)
                text.append(header.value, header.value == HTTPLogPolicy.redactedValue ? .magenta : .plain)
                text.append("\n")
            }
            appendBody(exchange.responseBody, contentType: exchange.responseHeader("content-type"), to: &text)
        }
        if let error = exchange.error {
            text.append("! " + error, .red)
            text.append("\n")
        }
        var result = text.text
        if result.hasSuffix("\n") { result.removeLast() }
        return result
    }

    /// A viewer notice (source found or lost, records lost), dimmed.
    package func notice(_ message: String, style: TextStyle = .dim) -> String {
        var text = StyledText(useColor: useColor)
        text.append("-- " + message, style)
        return text.text
    }

    private func appendBody(_ body: HTTPBody?, contentType: String?, to text: inout StyledText) {
        guard let body, body.totalBytes > 0 else { return }
        let rendered = Self.renderBody(body, contentType: contentType)
        text.append(rendered.indented(by: "  "), .plain, highlighting: highlight, keepingNewlines: true)
        text.append("\n")
        if body.isTruncated {
            text.append("  … (\(body.data.count) of \(body.totalBytes) bytes shown)", .dim)
            text.append("\n")
        }
    }

    /// A body for people: pretty JSON when it parses as JSON, the text when it is UTF-8, otherwise a size note.
    package static func renderBody(_ body: HTTPBody, contentType: String?) -> String {
        if !body.isTruncated, let pretty = JSONPrettyPrinter.format(body.data) { return pretty }
        if let text = body.text { return text }
        return "(\(body.totalBytes) bytes of \(contentType ?? "binary data"))"
    }

    private func origin(_ record: LogRecord) -> String {
        showHost && record.host != localHost
            ? "\(record.appName)[\(record.processID)]@\(record.host)" : "\(record.appName)[\(record.processID)]"
    }

    /// `key=value` pairs sorted by key; the HTTP record's own summary keys are left out (the message says it all).
    static func render(_ metadata: Logger.Metadata, skippingHTTPKeys: Bool) -> String {
        guard !metadata.isEmpty else { return "" }
        let skipped: Set<String> = skippingHTTPKeys ? ["method", "url", "status", "duration_ms"] : []
        return metadata.sorted { $0.key < $1.key }
            .filter { !skipped.contains($0.key) }
            .map { "\($0.key)=\($0.value)" }
            .joined(separator: " ")
    }

    static func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
        let count = text.count
        guard count < width else { return text }
        let padding = String(repeating: " ", count: width - count)
        return right ? padding + text : text + padding
    }

    /// The reason phrase of common status codes.
    package static func reason(_ status: Int) -> String {
        switch status {
        case 200: return "OK"
        case 201: return "Created"
        case 202: return "Accepted"
        case 204: return "No Content"
        case 301: return "Moved Permanently"
        case 302: return "Found"
        case 304: return "Not Modified"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 409: return "Conflict"
        case 422: return "Unprocessable Content"
        case 429: return "Too Many Requests"
        case 500: return "Internal Server Error"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 504: return "Gateway Timeout"
        default: return ""
        }
    }
}

extension String {
    /// Every line prefixed with `prefix`. A line ends at every line feed, the one of a `\r\n` pair included: split by
    /// `Character`, where `\r\n` is one character and not `"\n"`, a body holding `\r\n` would leave the line after
    /// it unindented, where it could pass for a line of the formatter's own.
    func indented(by prefix: String) -> String {
        unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false)
            .map { prefix + Substring($0) }
            .joined(separator: "\n")
    }
}
