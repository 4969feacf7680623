import Foundation
import NIOConcurrencyHelpers

/// A real process started by a test: its stdout lines are collected, its stdin can be written, it can be signalled.
final class ChildProcess: @unchecked Sendable {
    let name: String
    private let process = Process()
    private let stdinPipe = Pipe()
    private let stdoutPipe = Pipe()
    private let stderrPipe = Pipe()
    private let output = NIOLockedValueBox<(lines: [String], partial: String, errors: String)>(([], "", ""))

    init(_ executable: String, _ arguments: [String], name: String? = nil, environment: [String: String] = [:]) throws {
        self.name = name ?? (executable as NSString).lastPathComponent
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        env["AVAHI_COMPAT_NOWARN"] = "1"
        for (key, value) in environment { env[key] = value }
        process.environment = env
        process.standardInput = stdinPipe
        process.standardOutput = stdoutPipe
        process.standardError = stderrPipe
        let output = self.output
        stdoutPipe.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            guard !data.isEmpty else {
                handle.readabilityHandler = nil
                return
            }
            output.withLockedValue { state in
                state.partial += String(decoding: data, as: UTF8.self)
                while let newline = state.partial.firstIndex(of: "\n") {
                    state.lines.append(String(state.partial[..<newline]))
                    state.partial = String(state.partial[state.partial.index(after: newline)...])
                }
            }
        }
        stderrPipe.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            guard !data.isEmpty else {
                handle.readabilityHandler = nil
                return
            }
            output.withLockedValue { $0.errors += String(decoding: data, as: UTF8.self) }
        }
        try process.run()
    }

    var pid: Int32 { process.processIdentifier }
    var lines: [String] { output.withLockedValue { $0.lines } }
    var standardError: String { output.withLockedValue { $0.errors } }
    var isRunning: Bool { process.isRunning }

    /// Writes one line to the process's stdin.
    func send(_ line: String) {
        stdinPipe.fileHandleForWriting.write(Data((line + "\n").utf8))
    }

    /// Closes stdin (end of input).
    func closeInput() {
        try? stdinPipe.fileHandleForWriting.close()
    }

    func signal(_ signal: Int32) {
        kill(process.processIdentifier, signal)
    }

    /// Waits until a stdout line satisfies `predicate` (polling the collected output).
    @discardableResult
    func waitForLine(timeout: Double = 20, _ what: String, where predicate: @escaping @Sendable (String) -> Bool)
        async throws -> String
    {
        try await withTimeout(
            timeout,
            "\(self.name) to print \(what); stdout so far: \(self.lines); stderr: \(self.standardError.suffix(4000))"
        ) {
            while true {
                if let line = self.lines.first(where: predicate) { return line }
                try await Task.sleep(for: .milliseconds(20))
            }
        }
    }

    /// Waits for the process to exit; returns its status.
    func waitForExit(timeout: Double = 20) async throws -> Int32 {
        try await withTimeout(
            timeout,
            "\(self.name) to exit; stdout: \(self.lines.suffix(20)); stderr: \(self.standardError.suffix(2000))"
        ) {
            while self.process.isRunning { try await Task.sleep(for: .milliseconds(20)) }
            return self.process.terminationStatus
        }
    }

    /// Kills the process if it still runs.
    func terminate() {
        // No waitUntilExit(): Foundation spins in it when called while the process exits. Foundation reaps the child.
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    deinit { terminate() }
}
