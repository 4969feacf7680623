import Foundation
import NIOConcurrencyHelpers
import Subprocess

#if canImport(System)
import System
#else
import SystemPackage
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A real process started by a test, run by swift-subprocess: its standard output is collected line by line and its
/// standard error as text while it runs (so it never blocks on a full pipe), its standard input can be written, and it
/// can be signalled, waited for and stopped.
///
/// Every wait has a deadline and wakes on output or exit, not on a timer. The process is killed when the value is
/// dropped or the test's task is cancelled, so nothing a test starts outlives it.
///
/// ```swift
/// let chat = try await TestProcess(binaryPath("chat"), ["--name", "alice", "--service", type])
/// defer { chat.kill() }
/// try await chat.waitForLine(containing: "* connected to bob")
/// chat.send("hello")
/// await chat.stop()
/// ```
public final class TestProcess: Sendable {
    /// What the process reads on its standard input.
    public enum Input: Sendable {
        /// A pipe that ``write(_:)`` and ``send(_:)`` feed, open until ``closeInput()`` or the end of the process.
        case pipe
        /// End of file at once (as `/dev/null`).
        case closed
    }

    /// The executable's file name, or the name given at start; it prefixes ``transcript``.
    public let name: String
    /// The process identifier.
    public let pid: Int32

    private let state: TestProcessState
    private let input: AsyncStream<InputCommand>.Continuation
    private let run: Task<Void, Never>

    /// Starts `executable` with `arguments`. Its environment is this process's with `AVAHI_COMPAT_NOWARN=1`,
    /// without `NO_COLOR`, and with `environment` applied on top (a `nil` value removes a variable).
    ///
    /// Throws ``TestProcessError`` when the executable is missing (run `swift build` first; `make test` does) or
    /// cannot be started.
    public init(
        _ executable: String, _ arguments: [String], name: String? = nil, environment: [String: String?] = [:],
        input: Input = .pipe
    ) async throws {
        try requireExecutable(executable)
        _ = Self.ignoreBrokenPipes
        let name = name ?? (executable as NSString).lastPathComponent
        let state = TestProcessState()
        let (commands, commandSink) = AsyncStream<InputCommand>.makeStream()
        if case .closed = input { commandSink.yield(.close) }

        var variables = ProcessInfo.processInfo.environment
        variables["AVAHI_COMPAT_NOWARN"] = "1"
        variables["NO_COLOR"] = nil
        for (key, value) in environment { variables[key] = value }
        // Subprocess makes the keys of its `Environment` only from literals; a whole block of "KEY=VALUE\0" entries
        // takes any name.
        let block = variables.map { Array("\($0.key)=\($0.value)\0".utf8) }

        let (started, start) = AsyncStream<Result<Int32, TestProcessError>>.makeStream()
        run = Task {
            do {
                let result = try await Subprocess.run(
                    .path(FilePath(executable)), arguments: Arguments(arguments), environment: .custom(block),
                    input: .inputWriter, output: .sequence, error: .sequence
                ) { execution in
                    start.yield(.success(execution.processIdentifier.value))
                    start.finish()
                    await Self.serve(execution, commands: commands, input: commandSink, state: state)
                }
                state.exited(Self.shellStatus(result.terminationStatus))
            } catch {
                start.yield(.failure(TestProcessError(message: "could not start \(name): \(error)")))
                start.finish()
                state.exited(-1)
            }
        }
        var first = started.makeAsyncIterator()
        guard let outcome = await first.next() else {
            throw TestProcessError(message: "could not start \(name): the test was cancelled")
        }
        self.name = name
        self.pid = try outcome.get()
        self.state = state
        self.input = commandSink
    }

    /// A write to a process that has exited (or closed its input) fails with EPIPE instead of killing the test run
    /// with SIGPIPE. Once per test process.
    private static let ignoreBrokenPipes: Void = ignoreSIGPIPE()

    deinit {
        kill()
        input.finish()
        run.cancel()
    }

    /// Collects both outputs and feeds the input until the process has ended and its outputs are closed.
    private static func serve(
        _ execution: Execution<CustomWriteInput, SequenceOutput, SequenceOutput>,
        commands: AsyncStream<InputCommand>, input: AsyncStream<InputCommand>.Continuation, state: TestProcessState
    ) async {
        /// Hands each chunk of `output` to `collect` until it ends (a read error ends it too).
        @Sendable func read(_ output: SubprocessOutputSequence, into collect: @escaping @Sendable ([UInt8]) -> Void)
            async
        {
            do {
                for try await chunk in output { collect(chunk.withUnsafeBytes { Array($0) }) }
            } catch {}
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await read(execution.standardOutput, into: state.appendOutput) }
            group.addTask { await read(execution.standardError, into: state.appendError) }
            group.addTask {
                let writer = execution.standardInputWriter
                for await command in commands {
                    guard case .write(let bytes) = command else { break }
                    // A process that has stopped reading fails the write; the test sees that in its output.
                    do { _ = try await writer.write(bytes) } catch { break }
                }
                try? await writer.finish()
            }
            // Both outputs end when the process has exited (Subprocess cancels their reads then): the input has
            // nobody left to read it.
            await group.next()
            await group.next()
            input.finish()
            await group.next()
        }
    }

    /// A shell's convention: the exit code, or 128 plus the signal's number.
    private static func shellStatus(_ status: TerminationStatus) -> Int32 {
        switch status {
        case .exited(let code): return code
        case .signaled(let signal): return 128 + signal
        }
    }

    // MARK: Output

    /// Complete lines written to standard output so far, without their newlines.
    public var lines: [String] { state.read { $0.lines } }
    /// The number of complete standard output lines so far; pass it as `from:` to wait only for what comes next.
    public var lineCount: Int { state.read { $0.lines.count } }
    /// Everything written to standard output so far, the unfinished last line included.
    public var standardOutput: String {
        state.read { output in
            (output.lines.isEmpty ? "" : output.lines.joined(separator: "\n") + "\n")
                + String(decoding: output.partial, as: UTF8.self)
        }
    }
    /// Everything written to standard error so far (its last 2 MB once it passes 4 MB).
    public var standardError: String { state.read { $0.errors } }
    /// Both outputs, for a failure message.
    public var transcript: String { "\(name) stdout:\n\(standardOutput)\n\(name) stderr:\n\(standardError)" }

    /// Whether the process has not ended yet.
    public var isRunning: Bool { state.read { $0.status == nil } }
    /// The exit status once the process has ended: its exit code, or 128 plus the number of the signal that ended it.
    public var exitStatus: Int32? { state.read { $0.status } }

    /// Resident memory in KiB, from /proc; `nil` once the process has ended.
    public var residentKiB: Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        }
        return nil
    }

    // MARK: Input and signals

    /// Writes `text` to standard input, after what was written before.
    public func write(_ text: String) {
        input.yield(.write(Array(text.utf8)))
    }

    /// Writes `line` and a newline to standard input.
    public func send(_ line: String) {
        write(line + "\n")
    }

    /// Closes standard input (the process reads end of file after what was written).
    public func closeInput() {
        input.yield(.close)
    }

    /// Sends `signal` (`SIGTERM`, `SIGSTOP`, ...) if the process still runs.
    public func signal(_ signal: Int32) {
        // The process is reaped only after `isRunning` turns false, so its PID is still its own here.
        if isRunning { sendSignal(signal, to: pid) }
    }

    /// Ends the process at once (`SIGKILL`) without waiting; its task reaps it.
    public func kill() {
        signal(SIGKILL)
    }

    /// Asks the process to end (`SIGTERM`), kills it if it still runs after `grace`, and waits for it.
    public func stop(grace: Duration = .seconds(5)) async {
        guard isRunning else { return }
        signal(SIGTERM)
        if await !state.wait(timeout: grace, until: { $0.status != nil }) {
            kill()
            _ = await state.wait(timeout: .seconds(20)) { $0.status != nil }
        }
    }

    // MARK: Waiting

    /// Waits until `condition` holds for the complete lines so far; `false` if it does not within `timeout`, or the
    /// process ends without it holding.
    @discardableResult
    public func waitFor(timeout: Duration = .seconds(20), _ condition: @escaping @Sendable ([String]) -> Bool) async
        -> Bool
    {
        _ = await state.wait(timeout: timeout) { condition($0.lines) || $0.status != nil }
        return condition(lines)
    }

    /// Waits for a standard output line, from line `start` on, that satisfies `predicate`, and returns it. Throws a
    /// ``TimeoutError`` that names `what` and shows the output when none comes within `timeout`, or a
    /// ``TestProcessError`` as soon as the process ends without printing one.
    @discardableResult
    public func waitForLine(
        from start: Int = 0, timeout: Duration = .seconds(20), _ what: String,
        where predicate: @escaping @Sendable (String) -> Bool
    ) async throws -> String {
        let found = NIOLockedValueBox<String?>(nil)
        _ = await state.wait(timeout: timeout) { output in
            guard start < output.lines.count,
                let line = output.lines[start...].first(where: predicate)
            else { return output.status != nil }
            found.withLockedValue { $0 = line }
            return true
        }
        if let line = found.withLockedValue({ $0 }) { return line }
        if let status = exitStatus {
            throw TestProcessError(
                message: "\(name) exited with status \(status) without printing \(what)\n\(transcript.suffix(6000))")
        }
        throw TimeoutError(what: "\(name) to print \(what)\n\(transcript.suffix(6000))", timeout: timeout)
    }

    /// Waits for a standard output line, from line `start` on, that contains `text`, and returns it.
    @discardableResult
    public func waitForLine(containing text: String, from start: Int = 0, timeout: Duration = .seconds(20))
        async throws -> String
    {
        try await waitForLine(from: start, timeout: timeout, "a line with \"\(text)\"") { $0.contains(text) }
    }

    /// Waits until standard error contains `text`; `false` if it does not within `timeout` or the process ends
    /// without writing it.
    @discardableResult
    public func waitForError(containing text: String, timeout: Duration = .seconds(20)) async -> Bool {
        _ = await state.wait(timeout: timeout) { $0.errors.contains(text) || $0.status != nil }
        return standardError.contains(text)
    }

    /// Waits for the process to end and its outputs to be read; returns ``exitStatus``. Throws a ``TimeoutError``
    /// (with the output) if it still runs after `timeout`.
    @discardableResult
    public func waitForExit(timeout: Duration = .seconds(30)) async throws -> Int32 {
        guard await state.wait(timeout: timeout, until: { $0.status != nil }), let status = exitStatus else {
            throw TimeoutError(what: "\(name) to exit\n\(transcript.suffix(6000))", timeout: timeout)
        }
        return status
    }
}

/// A test process could not be started.
public struct TestProcessError: Error, CustomStringConvertible {
    /// What went wrong, and what to do about it.
    public var message: String
    public var description: String { message }
}

/// `signal(SIGPIPE, SIG_IGN)`, out of reach of ``TestProcess/signal(_:)`` inside the class.
private func ignoreSIGPIPE() {
    _ = signal(SIGPIPE, SIG_IGN)
}

/// `kill(2)`, out of reach of ``TestProcess/kill()`` inside the class.
private func sendSignal(_ signal: Int32, to pid: Int32) {
    _ = kill(pid, signal)
}

private enum InputCommand: Sendable {
    case write([UInt8])
    case close
}

/// What a ``TestProcess`` has collected, behind one lock, with the waiters that each change wakes.
private final class TestProcessState: Sendable {
    struct Output {
        var lines: [String] = []
        var partial: [UInt8] = []
        var errors = ""
        var status: Int32?
        var version = 0
        var waiters: [Int: AsyncStream<Void>.Continuation] = [:]
        var nextWaiter = 0
    }

    private static let errorLimit = 4_000_000
    private let box = NIOLockedValueBox(Output())

    func read<T>(_ body: (Output) -> T) -> T { box.withLockedValue { body($0) } }

    func appendOutput(_ bytes: [UInt8]) {
        change { output in
            output.partial.append(contentsOf: bytes)
            guard let last = output.partial.lastIndex(of: UInt8(ascii: "\n")) else { return }
            let complete = output.partial[..<last].split(
                separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
            output.lines.append(contentsOf: complete.map { String(decoding: $0, as: UTF8.self) })
            output.partial.removeSubrange(...last)
        }
    }

    func appendError(_ bytes: [UInt8]) {
        change { output in
            output.errors += String(decoding: bytes, as: UTF8.self)
            if output.errors.utf8.count > Self.errorLimit {
                output.errors = String(output.errors.suffix(Self.errorLimit / 2))
            }
        }
    }

    func exited(_ status: Int32) {
        change { $0.status = status }
    }

    private func change(_ body: (inout Output) -> Void) {
        let waiters = box.withLockedValue { output in
            body(&output)
            output.version += 1
            defer { output.waiters = [:] }
            return Array(output.waiters.values)
        }
        for waiter in waiters { waiter.yield() }
    }

    /// Waits until `condition` holds, checking it again on every change; `false` at the deadline.
    func wait(timeout: Duration, until condition: @escaping @Sendable (Output) -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while true {
            let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
            let (met, id) = box.withLockedValue { output -> (Bool, Int) in
                if condition(output) { return (true, 0) }
                output.nextWaiter += 1
                output.waiters[output.nextWaiter] = continuation
                return (false, output.nextWaiter)
            }
            if met { return true }
            if ContinuousClock.now >= deadline {
                box.withLockedValue { _ = $0.waiters.removeValue(forKey: id) }
                return false
            }
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await _ in stream { return }
                }
                group.addTask { try? await Task.sleep(until: deadline, clock: .continuous) }
                await group.next()
                group.cancelAll()
            }
            box.withLockedValue { _ = $0.waiters.removeValue(forKey: id) }
        }
    }
}
