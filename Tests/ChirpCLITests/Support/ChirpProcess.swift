import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A child process (`chirp`, `chat`) with its standard output and error collected as they arrive.
final class ChildProcess: @unchecked Sendable {
    let name: String
    private let process = Process()
    private let stdinPipe = Pipe()
    private let stdoutPipe = Pipe()
    private let stderrPipe = Pipe()
    private let lock = NSLock()
    private var out = Data()
    private var err = Data()
    private var outClosed = false
    private var errClosed = false

    /// Starts `executable` with `arguments`; the environment is this process's plus `environment`.
    init(_ executable: URL, _ arguments: [String], environment: [String: String] = [:]) throws {
        name = executable.lastPathComponent
        process.executableURL = executable
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        env["AVAHI_COMPAT_NOWARN"] = "1"
        for (key, value) in environment { env[key] = value }
        process.environment = env
        process.standardInput = stdinPipe
        process.standardOutput = stdoutPipe
        process.standardError = stderrPipe
        stdoutPipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
            self?.append(handle.availableData, toStdout: true)
        }
        stderrPipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
            self?.append(handle.availableData, toStdout: false)
        }
        try process.run()
    }

    private func append(_ data: Data, toStdout: Bool) {
        lock.lock()
        defer { lock.unlock() }
        if data.isEmpty {
            if toStdout { outClosed = true } else { errClosed = true }
            (toStdout ? stdoutPipe : stderrPipe).fileHandleForReading.readabilityHandler = nil
        } else if toStdout {
            out.append(data)
        } else {
            err.append(data)
        }
    }

    var pid: Int32 { process.processIdentifier }
    var stdout: String { lock.withLock { String(decoding: out, as: UTF8.self) } }
    var stderr: String { lock.withLock { String(decoding: err, as: UTF8.self) } }
    var stdoutLines: [String] { stdout.split(separator: "\n").map(String.init) }
    var isRunning: Bool { process.isRunning }

    /// Everything printed so far, for failure messages.
    var transcript: String { "\(name) stdout:\n\(stdout)\n\(name) stderr:\n\(stderr)" }

    /// Writes to the process's standard input.
    func write(_ text: String) {
        stdinPipe.fileHandleForWriting.write(Data(text.utf8))
    }

    /// Closes the process's standard input.
    func closeStdin() {
        try? stdinPipe.fileHandleForWriting.close()
    }

    func signal(_ number: Int32) {
        if process.isRunning { kill(process.processIdentifier, number) }
    }

    /// Polls until `condition` holds or `timeout` passes.
    static func eventually(timeout: Duration, _ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return condition()
    }

    /// Waits until standard output has a line containing `text`; returns that line.
    func line(containing text: String, timeout: Duration = .seconds(20)) async -> String? {
        var found: String?
        _ = await Self.eventually(timeout: timeout) {
            found = stdoutLines.first { $0.contains(text) }
            return found != nil
        }
        return found
    }

    /// Waits for the exit (and the end of its output); `nil` when it is still running after `timeout`.
    func exitStatus(timeout: Duration = .seconds(30)) async -> Int32? {
        let exited = await Self.eventually(timeout: timeout) { !process.isRunning }
        guard exited else { return nil }
        _ = await Self.eventually(timeout: .seconds(5)) { lock.withLock { outClosed && errClosed } }
        return process.terminationReason == .exit ? process.terminationStatus : 128 + process.terminationStatus
    }

    /// Ends the process if it still runs: SIGTERM, then SIGKILL.
    func stop() async {
        guard process.isRunning else { return }
        signal(SIGTERM)
        if await !Self.eventually(timeout: .seconds(5), { !process.isRunning }) { signal(SIGKILL) }
        _ = await exitStatus(timeout: .seconds(5))
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}

/// The binaries under test.
enum Binaries {
    /// The package's build products directory: the test bundle's own directory (it lives there), or
    /// `swift build --show-bin-path`; `CHIRP_BIN_DIR` overrides both.
    static let directory: URL = {
        if let dir = ProcessInfo.processInfo.environment["CHIRP_BIN_DIR"] { return URL(fileURLWithPath: dir) }
        let ownDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [ownDirectory, ownDirectory.deletingLastPathComponent()]
        where
            FileManager.default.isExecutableFile(atPath: candidate.appendingPathComponent("chirp").path)
        {
            return candidate
        }
        let swift = Process()
        swift.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        swift.arguments = ["swift", "build", "--show-bin-path"]
        swift.currentDirectoryURL = packageRoot
        let pipe = Pipe()
        swift.standardOutput = pipe
        try? swift.run()
        swift.waitUntilExit()
        let path = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        return URL(fileURLWithPath: path)
    }()

    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static var chirp: URL { directory.appendingPathComponent("chirp") }
    static var chat: URL { directory.appendingPathComponent("chat") }
    static var logdemo: URL { directory.appendingPathComponent("logdemo") }

    /// Fails the test (rather than crashing) when a binary was not built.
    static func require(_ url: URL) throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: url.path),
            "\(url.path) is missing: run `swift build` before `swift test` (make test does)")
    }
}

/// Runs `chirp` with `arguments` (plus COLUMNS=100 for stable help text).
func startChirp(_ arguments: [String], environment: [String: String] = [:]) throws -> ChildProcess {
    try Binaries.require(Binaries.chirp)
    return try ChildProcess(Binaries.chirp, arguments, environment: ["COLUMNS": "100"].merging(environment) { $1 })
}

/// Runs `chirp` to its end; fails the test if it runs longer than `timeout`.
func runChirp(
    _ arguments: [String], environment: [String: String] = [:], stdin: String? = nil, timeout: Duration = .seconds(30)
) async throws -> (status: Int32, process: ChildProcess) {
    let process = try startChirp(arguments, environment: environment)
    if let stdin { process.write(stdin) }
    process.closeStdin()
    let status = await process.exitStatus(timeout: timeout)
    if status == nil { await process.stop() }
    let finished = try #require(
        status, "chirp \(arguments.joined(separator: " ")) did not end within \(timeout)\n\(process.transcript)")
    return (finished, process)
}
