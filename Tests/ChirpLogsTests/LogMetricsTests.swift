import ChirpLogs
import ChirpTestSupport
import Foundation
import Logging
import Metrics
import MetricsTestKit
import Testing

/// A log source's swift-metrics (Docs/Metrics.md).
@Suite(.timeLimit(.minutes(5))) struct LogMetricsTests {
    @Test func recordsLoggedSpooledAndDroppedAreCounted() async throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let metrics = TestMetrics()
        var configuration = LogSourceConfiguration(appName: "counted")
        configuration.transceiver.metricsFactory = metrics
        configuration.spool = LogSpoolConfiguration(directory: directory)
        let source = try LogSource(configuration: configuration)
        let slow = source.subscribe(bufferingNewest: 10)
        let logger = Logger(label: "counted") { source.handler(label: $0) }
        for n in 1...100 { logger.info("n \(n)") }

        let app = [("app", "counted")]
        let logged = try await eventually { try metrics.expectCounter("chirp_log_records_total", app) }
        let spooled = try metrics.expectCounter("chirp_log_records_spooled_total", app)
        let dropped = try metrics.expectCounter("chirp_log_records_dropped_total", app + [("where", "subscribers")])
        _ = await ChirpTestSupport.eventually(timeout: .seconds(30)) {
            logged.totalValue >= 100 && spooled.totalValue >= 100 && dropped.totalValue >= 90
        }
        #expect(logged.totalValue == 100)
        #expect(spooled.totalValue == 100)
        #expect(dropped.totalValue == 90, "the subscriber keeps the newest 10")
        _ = slow
    }

    /// Waits (generously) until `body` stops throwing: a metric exists once the pump first reports it.
    private func eventually<T>(_ body: () throws -> T) async throws -> T {
        _ = await ChirpTestSupport.eventually(timeout: .seconds(30)) { (try? body()) != nil }
        return try body()
    }
}
