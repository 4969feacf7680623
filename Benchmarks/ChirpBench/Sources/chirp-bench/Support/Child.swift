import Foundation

#if os(Linux)
/// A child process started with `posix_spawn`, its output read line by line on threads of its own.
///
/// Not Foundation's `Process`: its `waitUntilExit()` polls a run loop every 50 ms on Linux, far too coarse for
/// start-up timings. Pipes are created close-on-exec, so one child never holds another child's stdin open.
final class Child: @unchecked Sendable {
    /// What to connect a standard stream of the child to.
    enum Stream {
        /// A pipe read (or written) by this process.
        case pipe
        /// /dev/null.
        case null
        /// This process's own stream.
        case inherit
    }

    let pid: pid_t
    let stdout: LineReader?
    let stderr: LineReader?
    private var stdinFD: Int32?
    private var status: Int32?

    /// Starts `path` with `arguments`. The child's stdin is a pipe: it sees EOF when ``closeStdin()`` is called or
    /// this process exits, which is how peers know to stop.
    init(
        _ path: String, _ arguments: [String], stdout: Stream = .pipe, stderr: Stream = .inherit, prefix: [String] = []
    ) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var toClose: [Int32] = []
        defer { toClose.forEach { _ = close($0) } }

        let input = try Self.makePipe()
        posix_spawn_file_actions_adddup2(&actions, input.read, 0)
        toClose.append(input.read)
        stdinFD = input.write

        func connect(_ stream: Stream, to target: Int32) throws -> Int32? {
            switch stream {
            case .inherit:
                return nil
            case .null:
                posix_spawn_file_actions_addopen(&actions, target, "/dev/null", O_WRONLY, 0)
                return nil
            case .pipe:
                let pipe = try Self.makePipe()
                posix_spawn_file_actions_adddup2(&actions, pipe.write, target)
                toClose.append(pipe.write)
                return pipe.read
            }
        }
        let out = try connect(stdout, to: 1)
        let err = try connect(stderr, to: 2)

        let argv = (prefix + [path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let environment = ProcessInfo.processInfo.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { environment.forEach { free($0) } }
        var pid: pid_t = 0
        let executable = prefix.first ?? path
        let result =
            executable.hasPrefix("/")
            ? posix_spawn(&pid, executable, &actions, nil, argv, environment)
            : posix_spawnp(&pid, executable, &actions, nil, argv, environment)
        guard result == 0 else {
            close(input.write)
            [out, err].compactMap { $0 }.forEach { _ = close($0) }
            throw BenchError("cannot start \(executable): \(String(cString: strerror(result)))")
        }
        self.pid = pid
        self.stdout = out.map(LineReader.init(fd:))
        self.stderr = err.map(LineReader.init(fd:))
    }

    private static func makePipe() throws -> (read: Int32, write: Int32) {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw BenchError("pipe failed: \(String(cString: strerror(errno)))") }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return (fds[0], fds[1])
    }

    /// Closes the child's stdin: peers exit when they see EOF.
    func closeStdin() {
        if let fd = stdinFD { close(fd) }
        stdinFD = nil
    }

    /// Waits for the child to exit; returns its exit status (128 + signal when killed).
    @discardableResult
    func wait() -> Int32 {
        if let status { return status }
        var raw: Int32 = 0
        while waitpid(pid, &raw, 0) == -1 && errno == EINTR {}
        let code = (raw & 0x7f) == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f)
        status = code
        return code
    }

    /// Waits up to `timeout` seconds for the child to exit; `nil` if it still runs.
    func wait(timeout: Double) -> Int32? {
        if let status { return status }
        let deadline = nowNanos() + UInt64(timeout * 1e9)
        while nowNanos() < deadline {
            var raw: Int32 = 0
            let result = waitpid(pid, &raw, WNOHANG)
            if result == pid {
                let code = (raw & 0x7f) == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f)
                status = code
                return code
            }
            usleep(2000)
        }
        return nil
    }

    /// Asks the child to stop (stdin closed), then terminates it if it has not exited within `grace` seconds.
    func stop(grace: Double = 3) {
        closeStdin()
        if wait(timeout: grace) == nil {
            kill(pid, SIGTERM)
            if wait(timeout: 2) == nil {
                kill(pid, SIGKILL)
                wait()
            }
        }
    }
}

extension Child {
    /// Starts this executable in `role`, a peer that listens and reports its port (`port N` on standard output);
    /// the child is stopped again when it does not (`what` names it in the error).
    static func listeningPeer(_ executable: String, role: String, what: String) throws -> (child: Child, port: Int) {
        let child = try Child(executable, ["--role", role])
        guard let line = child.stdout?.next(timeout: 30, where: { $0.hasPrefix("port ") }),
            let port = Int(line.text.dropFirst(5))
        else {
            child.stop()
            throw BenchError("\(what) did not start")
        }
        return (child, port)
    }
}

/// Reads a file descriptor line by line on a thread of its own, recording when each line arrived.
final class LineReader: @unchecked Sendable {
    struct Line {
        var text: String
        /// ``nowNanos()`` when the line was read.
        var time: UInt64
    }

    private let lines = Watched<(lines: [Line], consumed: Int, eof: Bool)>(([], 0, false))

    init(fd: Int32) {
        let thread = Thread { [lines] in
            var pending = [UInt8]()
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { break }
                let time = nowNanos()
                pending.append(contentsOf: buffer[0..<count])
                var complete: [Line] = []
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    complete.append(Line(text: String(decoding: pending[..<newline], as: UTF8.self), time: time))
                    pending.removeSubrange(...newline)
                }
                if !complete.isEmpty { lines.update { $0.lines += complete } }
            }
            close(fd)
            lines.update { $0.eof = true }
        }
        thread.start()
    }

    /// The next line (not returned before) for which `predicate` holds, skipping the ones before it; `nil` at EOF or
    /// after `timeout` seconds.
    func next(timeout: Double, where predicate: @escaping (String) -> Bool = { _ in true }) -> Line? {
        var found: Line?
        _ = lines.wait(timeout: timeout) { state in
            state.eof || state.lines[state.consumed...].contains { predicate($0.text) }
        }
        lines.update { state in
            guard let index = state.lines[state.consumed...].firstIndex(where: { predicate($0.text) }) else { return }
            found = state.lines[index]
            state.consumed = index + 1
        }
        return found
    }

    /// Everything read so far, for error messages.
    var text: String { lines.current.lines.map(\.text).joined(separator: "\n") }
}
#endif
