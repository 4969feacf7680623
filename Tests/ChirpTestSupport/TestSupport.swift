import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Temporary directories, free ports and NDJSON helpers shared by the tests.
public enum TestSupport {
    /// A fresh empty directory under the temporary directory.
    public static func temporaryDirectory() -> String {
        let path = NSTemporaryDirectory() + "chirp-logs-test-" + UUID().uuidString.prefix(8)
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// A TCP port that was free a moment ago.
    public static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Parses NDJSON lines into objects (lines that are not JSON objects are skipped).
    public static func objects(_ lines: [String]) -> [[String: Any]] {
        lines.compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }
    }

    /// The `seq` of every record object, in order.
    public static func sequences(_ lines: [String]) -> [Int] {
        objects(lines).filter { $0["event"] as? String == "record" }.compactMap { ($0["seq"] as? NSNumber)?.intValue }
    }
}
