import Foundation
import InMemoryLogging
import Logging

/// Every record the loggers made by ``logger(_:)`` wrote, kept by swift-log's `InMemoryLogHandler`: to check what was
/// logged (a refusal, a warning with its metadata) and what never was (a secret). With `CHIRP_TEST_LOG=LEVEL` set,
/// the records also go to standard error, at that level and above.
public final class LogCapture: Sendable {
    /// The metadata key under which each record keeps the label of its logger.
    public static let labelKey = "test.logger"
    private let store: InMemoryLogHandler

    public init() {
        var store = InMemoryLogHandler()
        store.logLevel = .debug
        self.store = store
    }

    /// A logger that writes here, at `debug` and above, with `label` in each record's metadata (``labelKey``).
    public func logger(_ label: String) -> Logger {
        let store = store
        var logger = Logger(label: label) { label in
            var captured = store
            captured[metadataKey: Self.labelKey] = .string(label)
            guard let level = Self.echoLevel else { return captured }
            var echo = StreamLogHandler.standardError(label: label)
            echo.logLevel = level
            return MultiplexLogHandler([captured, echo])
        }
        logger.logLevel = .debug
        return logger
    }

    /// The records, oldest first.
    public var entries: [InMemoryLogHandler.Entry] { store.entries }

    /// Each record as one line: `level label: message key=value ...`, metadata sorted by key.
    public var lines: [String] { entries.map(Self.line(of:)) }

    /// One record as a line: `level label: message key=value ...`.
    public static func line(of entry: InMemoryLogHandler.Entry) -> String {
        var metadata = entry.metadata
        let label = metadata.removeValue(forKey: labelKey).map { "\($0)" } ?? "?"
        let pairs = metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        return "\(entry.level) \(label): \(entry.message) \(pairs)"
    }

    /// ``lines``, joined by newlines.
    public var text: String { lines.joined(separator: "\n") }

    /// Waits until a line contains `text`; throws after `timeout` seconds, with the last lines logged.
    public func waitForLine(containing text: String, timeout: Double = 20) async throws {
        try await waitForEntry(timeout: timeout, "a log line containing '\(text)'") { _, line in line.contains(text) }
    }

    /// Waits until a record satisfies `predicate` (given the record and its line) and returns it; throws after
    /// `timeout` seconds, with the last lines logged.
    @discardableResult
    public func waitForEntry(
        timeout: Double = 20, _ what: String, where predicate: (InMemoryLogHandler.Entry, String) -> Bool
    ) async throws -> InMemoryLogHandler.Entry {
        let deadline = ContinuousClock.now + .milliseconds(Int64(timeout * 1000))
        while true {
            for entry in entries where predicate(entry, Self.line(of: entry)) { return entry }
            guard ContinuousClock.now < deadline else {
                throw LogCaptureTimeout(description: "no \(what) within \(timeout) s; logged: \(lines.suffix(20))")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    private static let echoLevel: Logger.Level? =
        ProcessInfo.processInfo.environment["CHIRP_TEST_LOG"].flatMap(Logger.Level.init(rawValue:))
}

/// What ``LogCapture/waitForLine(containing:timeout:)`` throws when the line does not come.
public struct LogCaptureTimeout: Error, CustomStringConvertible {
    public let description: String
}
