import Dispatch
import Foundation
import NIOConcurrencyHelpers

#if os(Linux)
/// Monotonic time in nanoseconds.
func nowNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// CPU time the calling thread has used, in nanoseconds: what a one-thread measurement costs, whatever the load of
/// other processes on the machine.
func threadCPUNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// CPU time (user + system, all threads) this process has used, in nanoseconds.
func processCPUNanos() -> UInt64 {
    var usage = rusage()
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    func nanos(_ time: timeval) -> UInt64 { UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_usec) * 1000 }
    return nanos(usage.ru_utime) + nanos(usage.ru_stime)
}

/// Read and write system calls this process has made so far (/proc/self/io: syscr, syscw), all threads.
func processSyscalls() -> (reads: UInt64, writes: UInt64) {
    guard let text = try? String(contentsOfFile: "/proc/self/io", encoding: .utf8) else { return (0, 0) }
    var reads: UInt64 = 0
    var writes: UInt64 = 0
    for line in text.split(separator: "\n") {
        let parts = line.split(separator: ":").map { $0.trimmingCharacters(in: .whitespaces) }
        guard parts.count == 2, let value = UInt64(parts[1]) else { continue }
        if parts[0] == "syscr" { reads = value }
        if parts[0] == "syscw" { writes = value }
    }
    return (reads, writes)
}

/// The median, quartiles and extremes of a set of samples.
struct Spread: Codable {
    var median: Double
    var min: Double
    var max: Double
    var q1: Double
    var q3: Double
    var runs: Int

    init(_ samples: [Double]) {
        let sorted = samples.sorted()
        runs = sorted.count
        guard !sorted.isEmpty else {
            median = .nan
            min = .nan
            max = .nan
            q1 = .nan
            q3 = .nan
            return
        }
        func quantile(_ q: Double) -> Double {
            let position = q * Double(sorted.count - 1)
            let low = Int(position.rounded(.down))
            let high = Swift.min(low + 1, sorted.count - 1)
            return sorted[low] + (sorted[high] - sorted[low]) * (position - Double(low))
        }
        median = quantile(0.5)
        min = sorted[0]
        max = sorted[sorted.count - 1]
        q1 = quantile(0.25)
        q3 = quantile(0.75)
    }

    /// The `q` quantile (0...1) of `samples`.
    static func quantile(_ q: Double, of samples: [Double]) -> Double {
        let sorted = samples.sorted()
        guard !sorted.isEmpty else { return .nan }
        return sorted[Swift.min(sorted.count - 1, Int((q * Double(sorted.count - 1)).rounded()))]
    }
}

/// Runs `body` in a task and blocks the calling (non-async) thread until it finishes.
///
/// The harness is synchronous on purpose (plain loops, blocking waits); this is its one bridge to the async API.
func runBlocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let result = NIOLockedValueBox<Result<T, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task {
        do {
            let value = try await body()
            result.withLockedValue { $0 = .success(value) }
        } catch {
            result.withLockedValue { $0 = .failure(error) }
        }
        done.signal()
    }
    done.wait()
    guard let outcome = result.withLockedValue({ $0 }) else { throw BenchError("task ended without a result") }
    return try outcome.get()
}

/// A value that threads wait on until it satisfies a condition.
final class Watched<Value: Sendable>: @unchecked Sendable {
    private let condition = NSCondition()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func update(_ change: (inout Value) -> Void) {
        condition.lock()
        change(&value)
        condition.broadcast()
        condition.unlock()
    }

    var current: Value {
        condition.lock()
        defer { condition.unlock() }
        return value
    }

    /// Waits until `predicate` holds; returns the value then, or `nil` after `timeout` seconds.
    func wait(timeout: Double, until predicate: (Value) -> Bool) -> Value? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while !predicate(value) {
            if !condition.wait(until: deadline) { return predicate(value) ? value : nil }
        }
        return value
    }
}

/// A fresh DNS-SD service type, unique to this run: "b" and 8 random hex digits.
func freshServiceType() -> String {
    "b" + String((0..<8).map { _ in "0123456789abcdef".randomElement() ?? "0" })
}

/// Sleeps the calling thread.
func sleepSeconds(_ seconds: Double) {
    usleep(useconds_t(max(0, seconds) * 1e6))
}
#endif
