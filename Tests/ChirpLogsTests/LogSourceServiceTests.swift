import ChirpLogs
import ChirpTestSupport
import Foundation
import Logging
import ServiceLifecycle
import Testing

/// A log source in swift-service-lifecycle's `ServiceGroup`.
@Suite(.timeLimit(.minutes(5))) struct LogSourceServiceTests {
    /// A log source with a spool, running in a `ServiceGroup`, whose first record is in the spool; the 499 logged after
    /// it wait for the sender's next pass, 600 s away (a long flush interval), so they are in the spool only if
    /// something writes them there.
    struct Running {
        let directory = TestSupport.temporaryDirectory()
        let source: LogSource
        let group: ServiceGroup
        let running: Task<Void, any Error>

        init() async throws {
            var configuration = LogSourceConfiguration(appName: "orders")
            configuration.serviceType = uniqueServiceType()
            configuration.transceiver.interface = .loopback
            configuration.spool = LogSpoolConfiguration(directory: directory)
            configuration.flushInterval = .seconds(600)
            let source = try LogSource(configuration: configuration)
            let logger = Logger(label: "orders") { source.handler(label: $0) }
            let group = ServiceGroup(
                configuration: .init(
                    services: [source], logger: Logger(label: "group") { _ in SwiftLogNoOpLogHandler() }))
            (self.source, self.group) = (source, group)
            running = Task { try await group.run() }
            // The first record starts a pass, which spools it and waits 600 s before the next one.
            logger.info("first")
            _ = await eventually(timeout: .seconds(30)) { source.statistics.unacknowledgedInSpool >= 1 }
            #expect(source.statistics.unacknowledgedInSpool == 1)
            for n in 2...500 { logger.info("record \(n)") }
            #expect(source.statistics.unacknowledgedInSpool == 1)
        }

        func removeSpool() { try? FileManager.default.removeItem(atPath: directory) }
    }

    /// The 499 records logged while the sender waits for its next pass are in the spool once a graceful shutdown
    /// returns: the shutdown writes them instead of losing them with the process.
    @Test func aGracefulShutdownWritesWhatWasLoggedToTheSpool() async throws {
        let run = try await Running()
        defer { run.removeSpool() }
        await run.group.triggerGracefulShutdown()
        try await run.running.value
        #expect(run.source.statistics.unacknowledgedInSpool == 500)
        #expect(run.source.port == nil)
    }

    /// Cancelled instead (the group's task cancelled, as by a cancellation signal or a parent task that ends, with no
    /// graceful shutdown first), the source still writes what was logged to the spool before it stops.
    @Test func aCancelledRunStillWritesWhatWasLoggedToTheSpool() async throws {
        let run = try await Running()
        defer { run.removeSpool() }
        run.running.cancel()
        // Bounded: a run that ignored its cancellation would fail here instead of hanging the test.
        _ = try await withTimeout(.seconds(60), "the cancelled service group to end") { await run.running.result }
        #expect(run.source.statistics.unacknowledgedInSpool == 500)
        #expect(run.source.port == nil)
    }
}
