import Dispatch
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Turns SIGINT and SIGTERM into task cancellation, so that commands stop their transceiver (saying goodbye to their
/// peers) and print their summary instead of dying mid-write. A second signal ends the process at once. Also ends a
/// command whose standard output has lost its reader (``OutputWatcher``), the same way.
enum Interrupts {
    /// How a run ended.
    enum Ending<Value: Sendable>: Sendable {
        /// The body returned `value`; `interrupted` says whether a signal came first.
        case finished(Value, interrupted: Bool)
        /// The reader of standard output went away: the body was cancelled, whatever it returned or threw.
        case outputClosed
    }

    /// Runs `body`; a SIGINT or SIGTERM cancels it, and so does the reader of standard output going away when
    /// `watchingOutput`. A body that throws `CancellationError` after a signal is reported as
    /// ``ExitStatus/interrupted``.
    static func run<Value: Sendable>(
        watchingOutput: Bool, _ body: @escaping @Sendable () async throws -> Value
    ) async throws -> Ending<Value> {
        let watcher = SignalWatcher(signals: [SIGINT, SIGTERM])
        defer { watcher.cancel() }
        let output = watchingOutput ? OutputWatcher.standardOutput() : nil
        defer { output?.cancel() }
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
            if let output {
                group.addTask {
                    await withTaskCancellationHandler {
                        await output.wait() ? .outputClosed : .noSignal
                    } onCancel: {
                        output.cancel()
                    }
                }
            }
            var interrupted = false
            var outputClosed = false
            var result: Value?
            do {
                while let event = try await group.next() {
                    switch event {
                    case .value(let value):
                        result = value
                        watcher.cancel()
                        output?.cancel()
                    case .signal:
                        interrupted = true
                        group.cancelAll()
                    case .outputClosed:
                        outputClosed = true
                        group.cancelAll()
                    case .noSignal:
                        break
                    }
                }
            } catch  where outputClosed {
                return .outputClosed  // whatever the cancelled body threw: nobody reads what it would say
            } catch is CancellationError where interrupted {
                throw CLIError(status: .interrupted, message: "interrupted")
            }
            guard let result else {
                if outputClosed { return .outputClosed }
                throw CLIError(status: .interrupted, message: "interrupted")
            }
            return .finished(result, interrupted: interrupted)
        }
    }

    private enum Event<Value: Sendable>: Sendable {
        case value(Value)
        case signal
        case outputClosed
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
