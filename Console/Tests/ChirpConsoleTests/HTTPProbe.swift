import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A minimal HTTP/1.1 client over a plain socket, for tests: one GET per connection, the raw status line, headers
/// and body, and for Server-Sent Events the text read until a condition holds. (Foundation's URLSession on Linux
/// cannot read a response as it streams; this reads exactly what the server wrote.)
struct HTTPProbe {
    struct Response {
        var status: Int
        var headers: [String: String]
        var body: String

        func header(_ name: String) -> String? { headers[name.lowercased()] }

        func json() -> [String: Any] {
            (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] ?? [:]
        }
    }

    struct ProbeError: Error, CustomStringConvertible {
        var description: String
    }

    let port: Int

    /// GET `path` with `headers` (Host defaults to 127.0.0.1:port); reads until the server closes or `timeout`.
    func get(_ path: String, headers: [String: String] = [:], timeout: Double = 20) async throws -> Response {
        let text = try await exchange(path, headers: headers, timeout: timeout) { _ in false }
        return try Self.parse(text)
    }

    /// GET `path` and read until `done` holds for the text received so far (or `timeout`): for live streams.
    func read(
        _ path: String, headers: [String: String] = [:], timeout: Double = 20,
        until done: @escaping @Sendable (String) -> Bool
    ) async throws -> String {
        try await exchange(path, headers: headers, timeout: timeout, until: done)
    }

    private func exchange(
        _ path: String, headers: [String: String], timeout: Double, until done: @escaping @Sendable (String) -> Bool
    ) async throws -> String {
        let port = self.port
        return try await withCheckedThrowingContinuation { continuation in
            Thread {
                do {
                    continuation.resume(
                        returning: try Self.blockingExchange(
                            port: port, path: path, headers: headers, timeout: timeout, until: done))
                } catch {
                    continuation.resume(throwing: error)
                }
            }.start()
        }
    }

    private static func blockingExchange(
        port: Int, path: String, headers: [String: String], timeout: Double, until done: (String) -> Bool
    ) throws -> String {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ProbeError(description: "socket: \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw ProbeError(description: "connect to 127.0.0.1:\(port): errno \(errno)") }
        var lines = ["GET \(path) HTTP/1.1", "Connection: close"]
        if headers.keys.first(where: { $0.lowercased() == "host" }) == nil { lines.append("Host: 127.0.0.1:\(port)") }
        for (name, value) in headers { lines.append("\(name): \(value)") }
        let request = Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8)
        _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, 100)
            if ready < 0 && errno != EINTR { break }
            if ready <= 0 {
                if done(String(decoding: received, as: UTF8.self)) { break }
                continue
            }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            received.append(contentsOf: buffer[0..<count])
            if done(String(decoding: received, as: UTF8.self)) { break }
        }
        return String(decoding: received, as: UTF8.self)
    }

    /// Splits a raw response; undoes chunked transfer encoding.
    static func parse(_ text: String) throws -> Response {
        guard let split = text.range(of: "\r\n\r\n") else {
            throw ProbeError(description: "no complete response: \(text.prefix(200))")
        }
        let head = text[..<split.lowerBound].components(separatedBy: "\r\n")
        let statusParts = head.first?.split(separator: " ") ?? []
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else {
            throw ProbeError(description: "bad status line: \(head.first ?? "")")
        }
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        var body = String(text[split.upperBound...])
        if headers["transfer-encoding"]?.lowercased() == "chunked" { body = dechunk(body) }
        return Response(status: status, headers: headers, body: body)
    }

    static func dechunk(_ text: String) -> String {
        var bytes = Array(text.utf8)[...]
        var out: [UInt8] = []
        while let lineEnd = bytes.firstIndex(of: UInt8(ascii: "\r")) {
            guard let size = Int(String(decoding: bytes[bytes.startIndex..<lineEnd], as: UTF8.self), radix: 16),
                size > 0
            else { break }
            let start = lineEnd + 2
            guard start + size <= bytes.endIndex else {
                out.append(contentsOf: bytes[start...])
                break
            }
            out.append(contentsOf: bytes[start..<start + size])
            bytes = bytes[min(bytes.endIndex, start + size + 2)...]
        }
        return String(decoding: out, as: UTF8.self)
    }
}
