import Foundation
import NIOConcurrencyHelpers

/// A process started on a harness host (`netns.sh exec HOST CMD...`): its stdout lines are collected with the time
/// each arrived, its stdin can be written, it can be signalled. netns.sh exec's into the command, so ``pid`` is the
/// command's own PID and a signal reaches it directly.
final class HostProcess: @unchecked Sendable {
    let name: String
    private let process = Process()
    private let stdinPipe = Pipe()
    private let stdoutPipe = Pipe()
    private let stderrPipe = Pipe()
    private let output = NIOLockedValueBox<(lines: [String], partial: String, errors: String)>(([], "", ""))

    init(_ executable: String, _ arguments: [String], name: String, environment: [String: String] = [:]) throws {
        self.name = name
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
            output.withLockedValue { state in
                state.errors += String(decoding: data, as: UTF8.self)
                if state.errors.utf8.count > 2_000_000 { state.errors = String(state.errors.suffix(1_000_000)) }
            }
        }
        try process.run()
    }

    var pid: Int32 { process.processIdentifier }
    var lines: [String] { output.withLockedValue { $0.lines } }
    var lineCount: Int { output.withLockedValue { $0.lines.count } }
    var standardError: String { output.withLockedValue { $0.errors } }
    var isRunning: Bool { process.isRunning }

    /// Writes one line to the process's stdin.
    func send(_ line: String) {
        stdinPipe.fileHandleForWriting.write(Data((line + "\n").utf8))
    }

    func signal(_ signal: Int32) {
        if process.isRunning { kill(process.processIdentifier, signal) }
    }

    /// Waits until a stdout line from index `from` on satisfies `predicate`; returns it and its index.
    @discardableResult
    func waitForLine(
        from start: Int = 0, timeout: Double = 20, _ what: String, where predicate: @escaping @Sendable (String) -> Bool
    ) async throws -> (line: String, index: Int) {
        try await withTimeout(
            timeout,
            "\(self.name) to print \(what); stdout so far: \(self.lines.suffix(30)); stderr: \(self.standardError.suffix(3000))"
        ) {
            var next = start
            while true {
                let lines = self.lines
                while next < lines.count {
                    if predicate(lines[next]) { return (lines[next], next) }
                    next += 1
                }
                try await Task.sleep(for: .milliseconds(10))
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

    /// Kills the process if it still runs (also a stopped one).
    func terminate() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
    }

    deinit { terminate() }
}
