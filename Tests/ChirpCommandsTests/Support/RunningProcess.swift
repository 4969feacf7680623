import Foundation
import NIOConcurrencyHelpers
import Testing

/// A child process whose standard output and error go to files, so nothing is lost and nothing blocks.
final class RunningProcess: Sendable {
    let process: Process
    let stdoutURL: URL
    let stderrURL: URL
    private let exit = NIOLockedValueBox<(status: Int32?, waiters: [CheckedContinuation<Int32, Never>])>((nil, []))

    /// Starts `executable`; its environment is this process's plus `environment` (an empty value unsets a variable,
    /// as far as Chirp is concerned).
    init(_ executable: URL, _ arguments: [String], in directory: URL, environment: [String: String] = [:]) throws {
        let id = UUID().uuidString.prefix(8)
        stdoutURL = directory.appendingPathComponent("\(executable.lastPathComponent)-\(id).out")
        stderrURL = directory.appendingPathComponent("\(executable.lastPathComponent)-\(id).err")
        _ = FileManager.default.createFile(atPath: stdoutURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: stderrURL.path, contents: nil)
        process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: stdoutURL)
        process.standardError = try FileHandle(forWritingTo: stderrURL)
        let box = exit
        process.terminationHandler = { process in
            let status = process.terminationStatus
            let waiters = box.withLockedValue { state -> [CheckedContinuation<Int32, Never>] in
                state.status = status
                defer { state.waiters = [] }
                return state.waiters
            }
            waiters.forEach { $0.resume(returning: status) }
        }
        try process.run()
    }

    var pid: Int32 { process.processIdentifier }
    var stdout: String { (try? String(contentsOf: stdoutURL, encoding: .utf8)) ?? "" }
    var stderr: String { (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? "" }
    var hasExited: Bool { exit.withLockedValue { $0.status != nil } }

    /// The exit status (for a signal: the signal number, as Foundation reports it).
    func waitForExit() async -> Int32 {
        await withCheckedContinuation { continuation in
            let status = exit.withLockedValue { state -> Int32? in
                if let status = state.status { return status }
                state.waiters.append(continuation)
                return nil
            }
            if let status { continuation.resume(returning: status) }
        }
    }

    /// Whether the process exited within `timeout`.
    func waitForExit(timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !hasExited && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        return hasExited
    }

    /// Waits until standard error contains `text`; false if the process exits or `timeout` passes first.
    func waitForError(containing text: String, timeout: Duration = .seconds(20)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if stderr.contains(text) { return true }
            if hasExited { return stderr.contains(text) }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    func signal(_ number: Int32) {
        if !hasExited { kill(pid, number) }
    }
}
