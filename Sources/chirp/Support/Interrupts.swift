import Dispatch
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Turns SIGINT and SIGTERM into task cancellation, so that commands stop their transceiver (saying goodbye to their
/// peers) and print their summary instead of dying mid-write. A second signal ends the process at once.
enum Interrupts {
    /// Runs `body`; a SIGINT or SIGTERM cancels it. Returns its value and whether a signal arrived.
    /// A body that throws `CancellationError` after a signal is reported as ``ExitStatus/interrupted``.
    static func run<Value: Sendable>(_ body: @escaping @Sendable () async throws -> Value) async throws -> (
        Value, interrupted: Bool
    ) {
        let watcher = SignalWatcher(signals: [SIGINT, SIGTERM])
        defer { watcher.cancel() }
        return try await withThrowingTaskGroup(of: Event<Value>.self) { group in
            group.addTask { .value(try await body()) }
            group.addTask {
                // Cancelled when the body ends, however it ends (the group cancels its children when it throws).
                await withTaskCancellationHandler {
                    await watcher.wait() ? .signal : .noSignal
                } onCancel: {
                    watcher.cancel()
                }
            }
            var interrupted = false
            var result: Value?
            do {
                while let event = try await group.next() {
                    switch event {
                    case .value(let value):
                        result = value
                        watcher.cancel()
                    case .signal:
                        interrupted = true
                        group.cancelAll()
                    case .noSignal:
                        break
                    }
                }
            } catch is CancellationError where interrupted {
                throw CLIError(status: .interrupted, message: "interrupted")
            }
            guard let result else { throw CLIError(status: .interrupted, message: "interrupted") }
            return (result, interrupted)
        }
    }

    private enum Event<Value: Sendable>: Sendable {
        case value(Value)
        case signal
        case noSignal
    }
}

/// Waits for the first of some signals, with a dispatch source per signal; cancellable.
private final class SignalWatcher: @unchecked Sendable {
    // @unchecked: `sources`, `continuation` and `outcome` are only touched under `lock`; the dispatch sources are not
    // `Sendable` on Linux (swift-corelibs-libdispatch), so a `NIOLockedValueBox` of them would not be either.
    private let lock = NSLock()
    private let signals: [Int32]
    private var sources: [any DispatchSourceSignal] = []
    private var continuation: CheckedContinuation<Bool, Never>?
    private var outcome: Bool?

    init(signals: [Int32]) {
        self.signals = signals
        for number in signals {
            signal(number, SIG_IGN)  // the dispatch source sees it; the default action (exit) does not run
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [weak self] in
                signal(number, SIG_DFL)  // a second one ends the process the usual way
                self?.finish(true)
            }
            source.resume()
            sources.append(source)
        }
    }

    /// `true` when a signal arrived, `false` when cancelled first.
    func wait() async -> Bool {
        await withCheckedContinuation { continuation in
            lock.lock()
            if let outcome {
                lock.unlock()
                continuation.resume(returning: outcome)
            } else {
                self.continuation = continuation
                lock.unlock()
            }
        }
    }

    func cancel() { finish(false) }

    private func finish(_ value: Bool) {
        lock.lock()
        guard outcome == nil else {
            lock.unlock()
            return
        }
        outcome = value
        let continuation = self.continuation
        self.continuation = nil
        let sources = self.sources
        if !value { self.sources = [] }
        lock.unlock()
        if !value {
            sources.forEach { $0.cancel() }
            for number in signals { signal(number, SIG_DFL) }
        }
        continuation?.resume(returning: value)
    }
}
