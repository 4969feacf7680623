import NIOConcurrencyHelpers

/// The sender's flow control: how far each receiver has acknowledged, and a wait for the slowest one.
///
/// `broadcast` skips a peer whose outbound queue is full (Configuration.outboundLimit). Keeping the sender at most a
/// window of ticks ahead of the slowest receiver's acknowledgement bounds every queue far below that limit, so no
/// receiver is skipped while no fault is injected.
final class AckWindow: Sendable {
    private struct State {
        var acked: [String: UInt64]
        var waiter: (threshold: UInt64, continuation: CheckedContinuation<Bool, Never>)?
        var failed = false
        var lastProgress = ContinuousClock.now
        var waits = 0
    }

    private let state: NIOLockedValueBox<State>

    init(receivers: [String]) {
        state = NIOLockedValueBox(State(acked: Dictionary(uniqueKeysWithValues: receivers.map { ($0, 0) })))
    }

    /// The lowest acknowledgement over the receivers still counted.
    var minimum: UInt64 { state.withLockedValue { Self.minimum(of: $0) } }

    /// How often the sender had to wait.
    var waits: Int { state.withLockedValue { $0.waits } }

    /// Records that `peer` has seen every tick below `next`.
    func ack(peer: String, next: UInt64) {
        let ready = state.withLockedValue { state -> CheckedContinuation<Bool, Never>? in
            guard let old = state.acked[peer], next > old else { return nil }
            state.acked[peer] = next
            state.lastProgress = .now
            return Self.release(&state, result: nil)
        }
        ready?.resume(returning: true)
    }

    /// Stops counting `peer` (it disconnected): it no longer holds the window back.
    func remove(peer: String) {
        let ready = state.withLockedValue { state -> CheckedContinuation<Bool, Never>? in
            state.acked[peer] = nil
            return Self.release(&state, result: nil)
        }
        ready?.resume(returning: true)
    }

    /// Returns `true` once every receiver has acknowledged at least `threshold`, `false` if ``failIfStalled(after:)``
    /// gave up first.
    func wait(until threshold: UInt64) async -> Bool {
        await withCheckedContinuation { continuation in
            let answer = state.withLockedValue { state -> Bool? in
                if state.failed { return false }
                if Self.minimum(of: state) >= threshold { return true }
                state.waits += 1
                state.waiter = (threshold, continuation)
                return nil
            }
            if let answer { continuation.resume(returning: answer) }
        }
    }

    /// Ends a wait that saw no acknowledgement for `seconds`; later waits fail at once. Returns whether it did.
    func failIfStalled(after seconds: Double) -> Bool {
        let stalled = state.withLockedValue { state -> CheckedContinuation<Bool, Never>? in
            guard state.waiter != nil else { return nil }
            let quiet = ContinuousClock.now - state.lastProgress
            guard quiet > .milliseconds(Int64(seconds * 1000)) else { return nil }
            state.failed = true
            return Self.release(&state, result: false)
        }
        stalled?.resume(returning: false)
        return stalled != nil
    }

    private static func minimum(of state: State) -> UInt64 { state.acked.values.min() ?? .max }

    private static func release(_ state: inout State, result: Bool?) -> CheckedContinuation<Bool, Never>? {
        guard let waiter = state.waiter else { return nil }
        if result == false || minimum(of: state) >= waiter.threshold {
            state.waiter = nil
            return waiter.continuation
        }
        return nil
    }
}
