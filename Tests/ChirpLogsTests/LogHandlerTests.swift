import ChirpTestSupport
import Foundation
import Logging
import NIOConcurrencyHelpers
import Testing

@testable import ChirpLogs

@Suite(.timeLimit(.minutes(5))) struct LogHandlerTests {
    /// The first `count` events of `stream`. Throws, failing the test with what did come, when they have not all come
    /// within `timeout` (generous: a loaded machine) or the stream ends before: a missing record fails, never hangs.
    func collect(_ stream: AsyncStream<LogStreamEvent>, count: Int, timeout: Duration = .seconds(30)) async throws
        -> [LogStreamEvent]
    {
        let events = NIOLockedValueBox<[LogStreamEvent]>([])
        return try await withTimeout(timeout, "\(count) events from the stream (got \(events.withLockedValue { $0 }))")
        {
            for await event in stream {
                let all = events.withLockedValue { events in
                    events.append(event)
                    return events
                }
                if all.count == count { return all }
            }
            let all = events.withLockedValue { $0 }
            throw StreamEnded(description: "the stream ended after \(all.count) of \(count) events: \(all)")
        }
    }

    struct StreamEnded: Error, CustomStringConvertible {
        var description: String
    }

    @Test func aMissingRecordFailsTheWaitInsteadOfHangingIt() async throws {
        let source = try LogSource(configuration: LogSourceConfiguration(appName: "missing"))
        let stream = source.subscribe()
        let logger = Logger(label: "m") { source.handler(label: $0) }
        logger.info("the only record")
        await #expect(throws: TimeoutError.self) { try await collect(stream, count: 2, timeout: .seconds(1)) }
        // The control: the record that did come is collected.
        #expect(try await collect(source.subscribe(history: 1), count: 1).count == 1)
    }

    @Test func handlersHaveValueSemanticsAndMergeMetadata() async throws {
        let source = try LogSource(configuration: LogSourceConfiguration(appName: "values"))
        let stream = source.subscribe()
        var handler = source.handler(
            label: "a", metadataProvider: Logger.MetadataProvider { ["request": "r1", "shared": "provider"] })
        handler.metadata = ["shared": "handler", "handler-only": "h"]
        let first = Logger(label: "a") { _ in handler }
        var second = first
        second.logLevel = .error
        second[metadataKey: "copy"] = "only in the copy"
        first.info("hello", metadata: ["shared": "call"])
        second.info("filtered out by the copy's level")
        second.error("from the copy")
        #expect(first.logLevel == .info)
        #expect(first[metadataKey: "copy"] == nil)

        let events = try await collect(stream, count: 2)
        guard case .record(let one) = events[0], case .record(let two) = events[1] else {
            Issue.record("expected two records, got \(events)")
            return
        }
        #expect(one.message == "hello")
        #expect(one.metadata["shared"] == "call")
        #expect(one.metadata["request"] == "r1")
        #expect(one.metadata["handler-only"] == "h")
        #expect(one.metadata["copy"] == nil)
        #expect(two.metadata["copy"] == "only in the copy")
        #expect(two.metadata["shared"] == "provider")
        #expect(two.sequence == one.sequence + 1)
        #expect(one.appName == "values" && one.processID == getpid() && one.file.hasSuffix("LogHandlerTests.swift"))
        #expect(one.source == "ChirpLogsTests")
    }

    @Test func theBufferIsBoundedAndLossesAreReported() async throws {
        var configuration = LogSourceConfiguration(appName: "bounded")
        configuration.bufferCapacity = 100
        let source = try LogSource(configuration: configuration)
        let logger = Logger(label: "b") { source.handler(label: $0) }
        for n in 1...1000 { logger.info("n \(n)") }
        // A subscriber that starts late gets what is left, the oldest 900 are gone from memory.
        let stream = source.subscribe(history: 1000)
        let events = try await collect(stream, count: 100)
        let sequences = events.compactMap { event -> UInt64? in
            if case .record(let record) = event { return record.sequence }
            return nil
        }
        #expect(sequences == Array(901...1000))
    }

    @Test func aSlowSubscriberLosesTheOldestAndItIsCounted() async throws {
        let source = try LogSource(configuration: LogSourceConfiguration(appName: "slow"))
        let stream = source.subscribe(bufferingNewest: 10)
        let logger = Logger(label: "s") { source.handler(label: $0) }
        for n in 1...500 { logger.info("n \(n)") }
        // Wait (generously: a loaded machine) for the sender to have fed all 500, dropping the oldest 490.
        _ = await eventually(timeout: .seconds(30)) { source.statistics.droppedForSubscribers >= 490 }
        #expect(source.statistics.droppedForSubscribers == 490)
        // The subscriber keeps the newest 10, nothing else.
        let events = try await collect(stream, count: 10)
        let sequences = events.compactMap { event -> UInt64? in
            if case .record(let record) = event { return record.sequence }
            return nil
        }
        #expect(sequences == Array(491...500))
    }

    @Test func logCallsNeverWaitForTheNetwork() throws {
        // No viewer, not even started: a million calls complete, memory stays within the buffer.
        var configuration = LogSourceConfiguration(appName: "alone")
        configuration.bufferCapacity = 1000
        let source = try LogSource(configuration: configuration)
        let logger = Logger(label: "x") { source.handler(label: $0) }
        for n in 0..<200_000 { logger.info("n \(n)") }
        #expect(source.buffer.bounds.next - source.buffer.bounds.oldest == 1000)
    }
}
