import Foundation
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#endif

/// A real process started by a test: its standard output collected line by line (and standard error as text) by
/// reader threads, so that a test can wait for lines with a deadline and never blocks on a full pipe.
public final class TestProcess: @unchecked Sendable {
    // @unchecked: `process` is only used through its thread-safe API; collected output sits behind locks.
    public let process = Process()
    private let out = NIOLockedValueBox<[String]>([])
    private let partial = NIOLockedValueBox<String>("")
    private let err = NIOLockedValueBox<String>("")
    public let name: String

    public init(_ executable: String, _ arguments: [String], environment extra: [String: String] = [:]) throws {
        name = (executable as NSString).lastPathComponent
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["AVAHI_COMPAT_NOWARN"] = "1"
        environment["NO_COLOR"] = nil
        for (key, value) in extra { environment[key] = value }
        process.environment = environment
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        process.standardInput = FileHandle.nullDevice
        try process.run()
        startReader(stdout.fileHandleForReading.fileDescriptor) { [weak self] chunk in self?.appendOut(chunk) }
        startReader(stderr.fileHandleForReading.fileDescriptor) { [weak self] chunk in
            self?.err.withLockedValue { $0 += String(decoding: chunk, as: UTF8.self) }
        }
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
        }
    }

    public var pid: Int32 { process.processIdentifier }
    public var isRunning: Bool { process.isRunning }
    /// Complete lines written to standard output so far.
    public var lines: [String] { out.withLockedValue { $0 } }
    /// Everything written to standard error so far.
    public var errorText: String { err.withLockedValue { $0 } }

    private func startReader(_ fd: Int32, _ deliver: @escaping @Sendable ([UInt8]) -> Void) {
        let thread = Thread {
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { break }
                deliver(Array(buffer[0..<count]))
            }
        }
        thread.start()
    }

    private func appendOut(_ chunk: [UInt8]) {
        let text = String(decoding: chunk, as: UTF8.self)
        let complete: [String] = partial.withLockedValue { partial in
            partial += text
            var parts = partial.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            partial = parts.removeLast()
            return parts
        }
        if !complete.isEmpty { out.withLockedValue { $0.append(contentsOf: complete) } }
    }

    /// Waits until `condition` holds for the lines so far; `false` at the deadline.
    @discardableResult
    public func waitFor(seconds: Double = 20, _ condition: ([String]) -> Bool) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition(lines) { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return condition(lines)
    }

    /// Waits for standard error to contain `text`.
    @discardableResult
    public func waitForError(containing text: String, seconds: Double = 20) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if errorText.contains(text) { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return errorText.contains(text)
    }

    /// Waits for the process to exit; its status, or `nil` if it is still running at the deadline.
    public func waitForExit(seconds: Double = 20) async -> Int32? {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline {
            try? await Task.sleep(for: .milliseconds(50))
        }
        if process.isRunning { return nil }
        // Let the readers drain what is left in the pipes.
        try? await Task.sleep(for: .milliseconds(100))
        return process.terminationStatus
    }

    public func signal(_ signal: Int32) {
        kill(pid, signal)
    }

    /// Ends the process (SIGKILL) and waits for it.
    public func stop() async {
        if process.isRunning { kill(pid, SIGKILL) }
        _ = await waitForExit(seconds: 10)
    }

    /// Resident memory in KiB, from /proc.
    public var residentKiB: Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        }
        return nil
    }
}

/// Paths and names shared by the tests (the test targets depend on this one, ChirpTestSupport, instead of copying it).
public enum TestSupport {
    /// The directory with the built executables (`swift build` puts them next to the test bundle).
    public static let binDirectory: String = {
        var candidates: [String] = []
        if let override = ProcessInfo.processInfo.environment["CHIRP_BIN_DIR"] { candidates.append(override) }
        let argv0 = CommandLine.arguments.first ?? ""
        var directory = URL(fileURLWithPath: argv0).deletingLastPathComponent()
        for _ in 0..<4 {
            candidates.append(directory.path)
            directory = directory.deletingLastPathComponent()
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()  // Tests/ChirpTestSupport/TestProcess.swift
        candidates.append(root.appendingPathComponent(".build/debug").path)
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0 + "/logdemo") } ?? candidates.last
            ?? "."
    }()

    public static func binary(_ name: String) -> String { binDirectory + "/" + name }

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
