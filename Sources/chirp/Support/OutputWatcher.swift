import Foundation
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Notices when the reader of standard output goes away (`chirp listen chat | head -1`: `head` has printed its line
/// and exited), without waiting for the next write to fail: a command that streams may have nothing to print for a
/// long time, and must still end at once.
///
/// A thread waits in `poll(2)` on standard output with no event requested: the kernel still reports `POLLERR` on a
/// pipe whose last reader has closed it (and `POLLHUP` on a socket whose peer is gone). It watches only a pipe or a
/// socket: a terminal or a file has no reader to lose. A second pipe of its own wakes the thread when the watch is
/// cancelled.
final class OutputWatcher: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Bool, Never>?
        /// `true` once the reader went away, `false` once cancelled.
        var outcome: Bool?
    }

    private let output: Int32
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let state = NIOLockedValueBox(State())

    /// A watcher of standard output, started; `nil` when standard output is not a pipe or a socket.
    static func standardOutput() -> OutputWatcher? {
        var info = stat()
        guard fstat(STDOUT_FILENO, &info) == 0 else { return nil }
        let kind = info.st_mode & S_IFMT
        guard kind == S_IFIFO || kind == S_IFSOCK else { return nil }
        var wake: [Int32] = [-1, -1]
        guard pipe(&wake) == 0 else { return nil }
        let watcher = OutputWatcher(output: STDOUT_FILENO, wakeRead: wake[0], wakeWrite: wake[1])
        let thread = Thread { watcher.watch() }
        thread.name = "chirp: standard output watcher"
        thread.start()
        return watcher
    }

    private init(output: Int32, wakeRead: Int32, wakeWrite: Int32) {
        self.output = output
        self.wakeRead = wakeRead
        self.wakeWrite = wakeWrite
    }

    /// `true` when the reader went away, `false` when the watch was cancelled first.
    func wait() async -> Bool {
        await withCheckedContinuation { continuation in
            let outcome = state.withLockedValue { state -> Bool? in
                if state.outcome == nil { state.continuation = continuation }
                return state.outcome
            }
            if let outcome { continuation.resume(returning: outcome) }
        }
    }

    /// Ends the watch (its thread too): ``wait()`` returns `false`, unless the reader went away first.
    func cancel() {
        let continuation = state.withLockedValue { state -> CheckedContinuation<Bool, Never>? in
            guard state.outcome == nil else { return nil }
            state.outcome = false
            // Under the lock: the thread closes this pipe only after it has taken the lock (``finish(_:)``), so the
            // write never goes to a closed (or reused) descriptor.
            var byte: UInt8 = 0
            _ = write(wakeWrite, &byte, 1)
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(returning: false)
    }

    /// The thread's body: polls until the reader goes away or the watch is cancelled.
    private func watch() {
        var descriptors = [
            pollfd(fd: output, events: 0, revents: 0),
            pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)
        ]
        var readerGone = false
        while true {
            let ready = poll(&descriptors, 2, -1)
            if ready < 0 {
                if errno == EINTR { continue }
                break  // cannot watch: behave as before, the next write that fails ends the command
            }
            if descriptors[1].revents != 0 { break }
            if descriptors[0].revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 {
                readerGone = true
                break
            }
        }
        finish(readerGone)
        close(wakeRead)
        close(wakeWrite)
    }

    private func finish(_ readerGone: Bool) {
        let continuation = state.withLockedValue { state -> CheckedContinuation<Bool, Never>? in
            guard state.outcome == nil else { return nil }
            state.outcome = readerGone
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(returning: readerGone)
    }
}
