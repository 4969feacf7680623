import Chirp
import Foundation
import Metrics
import NIOConcurrencyHelpers

#if os(Linux)
extension Harness {
    /// `oneway.small` again with a metrics backend on the sending side that counts every counter, gauge and timer
    /// update; the reference is `oneway.small` from the same run, whose sender has no backend (swift-metrics' no-op
    /// handlers, as in an app that bootstraps none). The note gives the updates per message: messages and bytes are
    /// counted once per write, not per message, so with no backend the metrics cost a few no-op calls per batch.
    func metricsFigures(_ session: ChirpSession, backend: CountingMetrics, plain: [Figure]) throws -> [Figure] {
        let reference: Figure.Reference? = plain.first { $0.name == "oneway.small" }.flatMap { figure in
            figure.value.map {
                .init(name: "oneway.small (no metrics backend, same run)", value: $0, spread: figure.spread)
            }
        }
        var counted: [Int] = []
        let (count, runs) = try smallBursts(session) { counted.append(backend.updates) }
        counted.append(backend.updates)
        let rates = runs.map { Double(count) / $0.seconds }
        let senderCPU = runs.map { $0.senderCPU / Double(count) / 1000 }
        let updates = zip(counted, counted.dropFirst()).map { Double($1 - $0) / Double(count) }
        return [
            Figure(
                name: "oneway.small-metrics",
                title:
                    "one-way throughput, small Codable message, the sender with a metrics backend counting every update",
                unit: "msg/s", samples: rates, reference: reference,
                note:
                    "\(count) msgs/run; metric updates per message: \(formatNumber(Spread(updates).median)); sender CPU per msg \(formatNumber(Spread(senderCPU).median)) µs",
                details: [
                    "messagesPerRun": Double(count), "metricUpdatesPerMessage": Spread(updates).median,
                    "senderCPUMicrosPerMessage": Spread(senderCPU).median
                ])
        ]
    }
}

/// A swift-metrics backend that only counts the updates it receives (a stand-in for a real one: each update is one
/// locked increment, about what an in-process Prometheus registry does).
final class CountingMetrics: MetricsFactory, Sendable {
    private let count = NIOLockedValueBox(0)

    /// Every update received so far.
    var updates: Int { count.withLockedValue { $0 } }

    fileprivate func record() { count.withLockedValue { $0 += 1 } }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler { Handler(self) }
    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        Handler(self)
    }
    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        Handler(self)
    }
    func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler { Handler(self) }
    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler { Handler(self) }
    func destroyCounter(_ handler: any CounterHandler) {}
    func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {}
    func destroyRecorder(_ handler: any RecorderHandler) {}
    func destroyMeter(_ handler: any MeterHandler) {}
    func destroyTimer(_ handler: any TimerHandler) {}

    private final class Handler: CounterHandler, FloatingPointCounterHandler, RecorderHandler, MeterHandler,
        TimerHandler, Sendable
    {
        let backend: CountingMetrics
        init(_ backend: CountingMetrics) { self.backend = backend }
        func increment(by: Int64) { backend.record() }
        func increment(by: Double) { backend.record() }
        func reset() { backend.record() }
        func record(_ value: Int64) { backend.record() }
        func record(_ value: Double) { backend.record() }
        func set(_ value: Int64) { backend.record() }
        func set(_ value: Double) { backend.record() }
        func decrement(by: Double) { backend.record() }
        func recordNanoseconds(_ duration: Int64) { backend.record() }
    }
}
#endif
