// logbench: the cost of a log call with ChirpLogs, and the rate records reach a viewer.
//
//     swift build -c release --product logbench && .build/release/logbench
//
// Needs a running avahi-daemon (the source and the viewer find each other over DNS-SD on loopback).
// Prints one line per figure: name, value, unit, and the reference measured in the same run.
import Chirp
import ChirpLogs
import Foundation
import Logging
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#endif

/// Nanoseconds on the monotonic clock.
@inline(__always)
func monotonicNanos() -> UInt64 {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
}

/// Median and 90th percentile of per-call cost: `batches` batches of `perBatch` calls, each batch timed as a whole.
func measure(batches: Int, perBatch: Int, _ body: (Int) -> Void) -> (median: Double, p90: Double) {
    var samples: [Double] = []
    samples.reserveCapacity(batches)
    for batch in 0..<batches {
        let start = monotonicNanos()
        for index in 0..<perBatch { body(batch &* perBatch &+ index) }
        samples.append(Double(monotonicNanos() - start) / Double(perBatch))
    }
    samples.sort()
    return (samples[samples.count / 2], samples[samples.count * 9 / 10])
}

/// What the in-process viewer counted.
final class ViewerCounts: Sendable {
    private struct State {
        var records: UInt64 = 0
        var lost: UInt64 = 0
        var highest: UInt64 = 0
        var following = false
    }
    private let state = NIOLockedValueBox(State())

    func handle(_ event: LogViewerEvent) {
        state.withLockedValue { state in
            switch event {
            case .records(let records, _):
                state.records += UInt64(records.count)
                state.highest = max(state.highest, records.last?.sequence ?? 0)
            case .lost(let loss, _):
                state.lost += loss.count
                state.highest = max(state.highest, loss.through)
            case .following:
                state.following = true
            default:
                break
            }
        }
    }

    var snapshot: (records: UInt64, lost: UInt64, highest: UInt64, following: Bool) {
        state.withLockedValue { ($0.records, $0.lost, $0.highest, $0.following) }
    }
}

func waitUntil(seconds: Double, _ condition: @Sendable () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return condition()
}

/// Figures collected for the JSON file.
final class Results: @unchecked Sendable {
    // @unchecked: used from the main task only.
    private(set) var all: [(String, Double, String, String)] = []
    func append(_ row: (String, Double, String, String)) { all.append(row) }
}

enum BenchError: Error {
    case viewerDidNotConnect
}

@main
enum LogBench {
    nonisolated static func main() async throws {
        setenv("AVAHI_COMPAT_NOWARN", "1", 1)
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .warning
            return handler
        }
        let arguments = CommandLine.arguments
        let quick = arguments.contains("--quick")
        let batches = quick ? 500 : 5000
        let perBatch = 100
        let rates: [Double] = quick ? [200_000] : [100_000, 200_000, 300_000, 400_000]
        let paceSeconds = quick ? 1.0 : 3.0
        let service = "bench" + String(format: "%06x", UInt32.random(in: 0...0xFFFFFF))

        // A source and a viewer in this process, over DNS-SD and TCP on loopback.
        var sourceConfiguration = LogSourceConfiguration(appName: "logbench")
        sourceConfiguration.serviceType = service
        sourceConfiguration.transceiver.interface = .loopback
        sourceConfiguration.bufferCapacity = 65_536
        let source = try LogSource(configuration: sourceConfiguration)
        try await source.start()
        let logger = Logger(label: "bench") { source.handler(label: $0) }

        var viewerConfiguration = LogViewerConfiguration()
        viewerConfiguration.serviceType = service
        viewerConfiguration.transceiver.interface = .loopback
        viewerConfiguration.history = 0
        let counts = ViewerCounts()
        let results = Results()
        func report(_ name: String, _ value: Double, _ unit: String, _ reference: String) {
            results.append((name, value, unit, reference))
            let padded = name.padding(toLength: 46, withPad: " ", startingAt: 0)
            let unitPadded = unit.padding(toLength: 10, withPad: " ", startingAt: 0)
            print("\(padded) \(String(format: "%12.1f", value)) \(unitPadded) \(reference)")
        }
        let viewerSettings = viewerConfiguration
        try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask {
            try await LogViewer(configuration: viewerSettings).run { event in counts.handle(event) }
        }
        guard await waitUntil(seconds: 20, { counts.snapshot.following && source.statistics.viewers == 1 }) else {
            FileHandle.standardError.write(Data("logbench: the viewer did not connect (is avahi-daemon running?)\n".utf8))
            throw BenchError.viewerDidNotConnect
        }


        // (a) One logger.info with the handler installed and a viewer attached, next to StreamLogHandler to /dev/null.
        _ = measure(batches: batches / 10, perBatch: perBatch) { _ in logger.info("request handled", metadata: ["status": "200"]) }  // warm-up
        let chirpCall = measure(batches: batches, perBatch: perBatch) { _ in
            logger.info("request handled", metadata: ["status": "200"])
        }
        let afterCalls = counts.snapshot
        _ = await waitUntil(seconds: 10) { counts.snapshot.highest >= source.statistics.logged }

        // StreamLogHandler writes to stdout: point stdout at /dev/null while it runs.
        let savedStdout = dup(STDOUT_FILENO)
        let devNull = open("/dev/null", O_WRONLY)
        fflush(nil)
        dup2(devNull, STDOUT_FILENO)
        let streamLogger = Logger(label: "bench") { StreamLogHandler.standardOutput(label: $0) }
        _ = measure(batches: batches / 10, perBatch: perBatch) { _ in streamLogger.info("request handled", metadata: ["status": "200"]) }
        let streamCall = measure(batches: batches, perBatch: perBatch) { _ in
            streamLogger.info("request handled", metadata: ["status": "200"])
        }
        fflush(nil)
        dup2(savedStdout, STDOUT_FILENO)
        close(devNull)

        print("figure".padding(toLength: 46, withPad: " ", startingAt: 0) + "        value unit       reference (same run)")
        report("log call, handler + viewer attached (median)", chirpCall.median, "ns", String(format: "StreamLogHandler to /dev/null: %.1f ns (ratio %.2f)", streamCall.median, chirpCall.median / streamCall.median))
        report("log call, handler + viewer attached (p90)", chirpCall.p90, "ns", String(format: "StreamLogHandler to /dev/null: %.1f ns", streamCall.p90))
        let callRecords = UInt64(batches * perBatch)
        report("  records of that run lost to the viewer", Double(counts.snapshot.lost - afterCalls.lost), "records", "of \(callRecords) logged as fast as possible")

        // (b) End to end: records per second to one viewer at a paced rate, and the losses.
        for rate in rates {
            let before = counts.snapshot
            let firstSequence = source.statistics.logged + 1
            let total = Int(rate * paceSeconds)
            let start = monotonicNanos()
            var sent = 0
            while sent < total {
                let due = min(total, Int(Double(monotonicNanos() - start) / 1e9 * rate) + 1)
                while sent < due {
                    logger.info("request handled", metadata: ["status": "200"])
                    sent += 1
                }
                if sent < due + 64 { usleep(200) }
            }
            let lastSequence = firstSequence + UInt64(total) - 1
            _ = await waitUntil(seconds: 30) { counts.snapshot.highest >= lastSequence }
            let elapsed = Double(monotonicNanos() - start) / 1e9
            let after = counts.snapshot
            let delivered = after.records - before.records
            let lost = after.lost - before.lost
            report(String(format: "end to end at %.0fk records/s offered", rate / 1000), Double(delivered) / elapsed, "records/s",
                   "\(lost) lost of \(total) (\(String(format: "%.2f", elapsed)) s until the viewer had all)")
        }

        // (b') As fast as the app can log: how many reach the viewer, how many are reported lost.
        do {
            let before = counts.snapshot
            let firstSequence = source.statistics.logged + 1
            let total = quick ? 200_000 : 1_000_000
            let start = monotonicNanos()
            for _ in 0..<total { logger.info("request handled", metadata: ["status": "200"]) }
            let lastSequence = firstSequence + UInt64(total) - 1
            _ = await waitUntil(seconds: 60) { counts.snapshot.highest >= lastSequence }
            let elapsed = Double(monotonicNanos() - start) / 1e9
            let after = counts.snapshot
            report("end to end, unpaced burst", Double(after.records - before.records) / elapsed, "records/s",
                   "\(after.lost - before.lost) lost of \(total) logged in \(String(format: "%.3f", elapsed)) s")
        }

        group.cancelAll()
        }
        await source.stop()

        if let index = arguments.firstIndex(of: "--json"), index + 1 < arguments.count {
            let objects = results.all.map { ["name": $0.0, "value": $0.1, "unit": $0.2, "reference": $0.3] as [String: Any] }
            let data = try JSONSerialization.data(withJSONObject: objects, options: [.prettyPrinted, .sortedKeys])
            try data.write(to: URL(fileURLWithPath: arguments[index + 1]))
        }

    }
}
