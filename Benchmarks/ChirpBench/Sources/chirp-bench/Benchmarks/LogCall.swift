import Chirp
import ChirpLogs
import Foundation
import Logging
import NIOConcurrencyHelpers

#if os(Linux)
extension Harness {
    /// The log channel (ChirpLogs): the cost of one `logger.info` with the Chirp handler and a viewer attached, and
    /// the rate records reach one viewer (paced, then as fast as the app can log). The source and the viewer are in
    /// this process and find each other over DNS-SD on loopback. Reference for the call: swift-log's
    /// `StreamLogHandler` writing to /dev/null, measured in a child process whose standard error is /dev/null.
    func logCall() throws -> [Figure] {
        let reference = try streamLogHandlerReference()
        let quick = options.quick
        let runs = plan.runs
        let batches = quick ? 500 : 5000
        let perBatch = 100
        let paced = 550_000.0  // a little above issue 17's goal of 500,000 records/s
        let pacedSeconds = quick ? 0.5 : 1.0
        let burstRecords = quick ? 200_000 : 1_000_000
        let serviceType = freshServiceType()

        @Sendable func measure(
            source: LogSource, logger: Logger, viewer viewerSettings: LogViewerConfiguration,
            counts: ViewerCounts
        ) async throws -> LogFigures {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await LogViewer(configuration: viewerSettings).run { counts.handle($0) } }
                defer { group.cancelAll() }
                guard await waitUntil(seconds: 20, { counts.snapshot.following && source.statistics.viewers == 1 })
                else {
                    throw BenchError("log: the viewer did not connect")
                }
                var figures = LogFigures()

                // One call, median per call over batches of `perBatch` calls.
                _ = perCallNanos(batches: batches / 10, perBatch: perBatch) {
                    logger.info("request handled", metadata: ["peer": "alice"])
                }
                for _ in 0..<runs {
                    let lostBefore = counts.snapshot.lost
                    let calls = perCallNanos(batches: batches / runs, perBatch: perBatch) {
                        logger.info("request handled", metadata: ["peer": "alice"])
                    }
                    figures.call.append(calls.median)
                    figures.callP90.append(calls.p90)
                    _ = await waitUntil(seconds: 30) { counts.snapshot.highest >= source.statistics.logged }
                    figures.callLost += counts.snapshot.lost - lostBefore
                }

                // Paced: `paced` records/s offered for `pacedSeconds`, records/s until the viewer had them all.
                for _ in 0..<runs {
                    let before = counts.snapshot
                    let first = source.statistics.logged + 1
                    let total = Int(paced * pacedSeconds)
                    let start = nowNanos()
                    var sent = 0
                    while sent < total {
                        let due = min(total, Int(Double(nowNanos() - start) / 1e9 * paced) + 1)
                        while sent < due {
                            logger.info("request handled", metadata: ["peer": "alice"])
                            sent += 1
                        }
                        if sent < total { usleep(100) }
                    }
                    _ = await waitUntil(seconds: 30) { counts.snapshot.highest >= first + UInt64(total) - 1 }
                    let after = counts.snapshot
                    figures.stream.append(Double(after.records - before.records) / (Double(nowNanos() - start) / 1e9))
                    figures.streamLost += after.lost - before.lost
                    figures.streamOffered += UInt64(total)
                }

                // Unpaced: as fast as the app can log.
                let before = counts.snapshot
                let first = source.statistics.logged + 1
                let start = nowNanos()
                for _ in 0..<burstRecords { logger.info("request handled", metadata: ["peer": "alice"]) }
                let logged = nowNanos()
                _ = await waitUntil(seconds: 60) { counts.snapshot.highest >= first + UInt64(burstRecords) - 1 }
                let after = counts.snapshot
                figures.burst = Double(after.records - before.records) / (Double(nowNanos() - start) / 1e9)
                figures.burstLogRate = Double(burstRecords) / (Double(logged - start) / 1e9)
                figures.burstLost = after.lost - before.lost
                return figures
            }
        }

        let measured = try runBlocking { () async throws -> LogFigures in
            var sourceConfiguration = LogSourceConfiguration(appName: "chirp-bench")
            sourceConfiguration.serviceType = serviceType
            sourceConfiguration.transceiver.interface = .loopback
            sourceConfiguration.transceiver.logger = PeerRoles.quietLogger
            sourceConfiguration.bufferCapacity = 65_536
            let source = try LogSource(configuration: sourceConfiguration)
            try await source.start()
            let logger = Logger(label: "bench") { source.handler(label: $0) }

            var viewerConfiguration = LogViewerConfiguration()
            viewerConfiguration.serviceType = serviceType
            viewerConfiguration.transceiver.interface = .loopback
            viewerConfiguration.transceiver.logger = PeerRoles.quietLogger
            viewerConfiguration.history = 0
            let viewerSettings = viewerConfiguration
            let counts = ViewerCounts()
            let figures: LogFigures
            do {
                figures = try await measure(source: source, logger: logger, viewer: viewerSettings, counts: counts)
            } catch {
                await source.stop()
                throw error
            }
            await source.stop()
            return figures
        }

        return [
            Figure(
                name: "log.info", title: "one logger.info with the Chirp log handler and a viewer attached", unit: "ns",
                samples: measured.call, reference: reference, goal: .atMost(300),
                note:
                    "median per call over batches of \(perBatch); p90 of batches \(formatNumber(Spread(measured.callP90).median)) ns; "
                    + "\(measured.callLost) of \(batches / runs * perBatch * runs) records reported lost to the viewer",
                details: ["p90": Spread(measured.callP90).median, "lost": Double(measured.callLost)]),
            Figure(
                name: "log.stream",
                title: "log records/s streamed to one viewer, \(Int(paced / 1000))k records/s offered",
                unit: "records/s", samples: measured.stream, goal: .atLeast(500_000),
                note:
                    "\(measured.streamLost) lost of \(measured.streamOffered) offered\(measured.streamLost == 0 ? " (none dropped)" : "")",
                details: ["lost": Double(measured.streamLost), "offeredPerSecond": paced]),
            Figure(
                name: "log.stream-burst",
                title: "log records/s reaching one viewer when the app logs as fast as it can",
                unit: "records/s", samples: [measured.burst],
                note:
                    "\(burstRecords) records logged at \(formatNumber(measured.burstLogRate)) records/s; \(measured.burstLost) reported lost (the source's buffer overflowed)",
                details: ["lost": Double(measured.burstLost), "loggedPerSecond": measured.burstLogRate])
        ]
    }

    /// swift-log's `StreamLogHandler` to /dev/null, in a child process: the reference of `log.info`.
    private func streamLogHandlerReference() throws -> Figure.Reference {
        let batches = options.quick ? 3 : plan.runs
        let child = try Child(
            executable, ["--role", "log-ref", "--count", options.quick ? "20000" : "100000", "--batches", "\(batches)"],
            stdout: .pipe, stderr: .null)
        defer { child.stop() }
        var samples: [Double] = []
        for _ in 0..<batches {
            guard let line = child.stdout?.next(timeout: 60, where: { $0.hasPrefix("batch ") }),
                let nanos = Double(line.text.dropFirst(6))
            else { throw BenchError("log-ref: no result") }
            samples.append(nanos)
        }
        return Figure.Reference(
            name: "StreamLogHandler-to-/dev/null", value: Spread(samples).median, spread: Spread(samples))
    }
}

/// What the log benchmark measured.
private struct LogFigures: Sendable {
    var call: [Double] = []
    var callP90: [Double] = []
    var callLost: UInt64 = 0
    var stream: [Double] = []
    var streamLost: UInt64 = 0
    var streamOffered: UInt64 = 0
    var burst: Double = 0
    var burstLogRate: Double = 0
    var burstLost: UInt64 = 0
}

/// Median and 90th percentile of the cost of one call: `batches` batches of `perBatch` calls, each timed as a whole.
private func perCallNanos(batches: Int, perBatch: Int, _ body: () -> Void) -> (median: Double, p90: Double) {
    var samples: [Double] = []
    samples.reserveCapacity(batches)
    for _ in 0..<max(1, batches) {
        let start = nowNanos()
        for _ in 0..<perBatch { body() }
        samples.append(Double(nowNanos() - start) / Double(perBatch))
    }
    return (Spread.quantile(0.5, of: samples), Spread.quantile(0.9, of: samples))
}

/// Polls `condition` every 5 ms for up to `seconds`.
private func waitUntil(seconds: Double, _ condition: @Sendable () -> Bool) async -> Bool {
    let deadline = nowNanos() + UInt64(seconds * 1e9)
    while nowNanos() < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return condition()
}

/// What the benchmark's viewer counted.
private final class ViewerCounts: Sendable {
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
#endif
