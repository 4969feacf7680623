import Dispatch
import Foundation
import NIOConcurrencyHelpers

/// Becomes set on SIGTERM or SIGINT, so a role can end early and still print its summary.
final class StopSignal: @unchecked Sendable {  // `sources` is set once, in init, and only kept alive
    private let stopped = NIOLockedValueBox(false)
    private let sources: [any DispatchSourceSignal]

    /// A stop signal that never becomes set.
    static let never = StopSignal(signals: [])

    /// Watches `signals` (they no longer end the process).
    init(signals: [Int32] = [SIGTERM, SIGINT]) {
        var made: [any DispatchSourceSignal] = []
        for number in signals {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [stopped] in stopped.withLockedValue { $0 = true } }
            source.resume()
            made.append(source)
        }
        sources = made
    }

    var isSet: Bool { stopped.withLockedValue { $0 } }
}

/// Checks `condition` every `interval` until it holds, the stop signal is set or `timeout` seconds pass;
/// returns whether it held.
func poll(timeout: Double, interval: Duration = .milliseconds(50), stop: StopSignal, _ condition: () -> Bool) async
    -> Bool
{
    let start = ContinuousClock.now
    while true {
        if condition() { return true }
        if stop.isSet || seconds(since: start) >= timeout { return false }
        try? await Task.sleep(for: interval)
    }
}
