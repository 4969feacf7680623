import Dispatch
import Foundation

/// SIGINT and SIGTERM as an async sequence. Nonisolated on purpose: the dispatch handlers must not be formed in a
/// main-actor context (they run on a global queue).
enum TerminationSignals {
    static func stream() -> AsyncStream<Int32> {
        let (stream, continuation) = AsyncStream.makeStream(of: Int32.self)
        var sources: [any DispatchSourceSignal] = []
        for signalNumber in [SIGINT, SIGTERM] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler { continuation.yield(signalNumber) }
            source.resume()
            sources.append(source)
        }
        let retained = SignalSources(sources)
        continuation.onTermination = { _ in retained.cancel() }
        return stream
    }
}

/// Keeps the dispatch sources alive as long as the stream.
private final class SignalSources: @unchecked Sendable {
    // @unchecked: `sources` is set once and only cancelled; dispatch sources are not `Sendable` on Linux.
    private let sources: [any DispatchSourceSignal]
    init(_ sources: [any DispatchSourceSignal]) { self.sources = sources }
    func cancel() { sources.forEach { $0.cancel() } }
}
