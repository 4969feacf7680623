import Foundation
import Logging
import NIOConcurrencyHelpers

/// Every line a logger wrote, to check what a source logged (a refusal) and what it never did (a secret).
final class LogCapture: Sendable {
    private let box = NIOLockedValueBox<[String]>([])

    var lines: [String] { box.withLockedValue { $0 } }
    var text: String { lines.joined(separator: "\n") }

    /// A logger that writes here, at `debug` and above, metadata included.
    func logger(_ label: String) -> Logger {
        let capture = self
        return Logger(label: label) { label in CaptureHandler(label: label, capture: capture) }
    }

    /// Waits until a line contains `text`; `false` at the deadline.
    func waitForLine(containing text: String, seconds: Double = 20) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if lines.contains(where: { $0.contains(text) }) { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return lines.contains { $0.contains(text) }
    }

    private struct CaptureHandler: LogHandler {
        let label: String
        let capture: LogCapture
        var logLevel: Logger.Level = .debug
        var metadata: Logger.Metadata = [:]

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let all = metadata.merging(event.metadata ?? [:]) { $1 }
            let pairs = all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            capture.box.withLockedValue { $0.append("\(event.level) \(label): \(event.message) \(pairs)") }
        }
    }
}
