import Chirp
import ChirpLogs
import Foundation
import Logging
import NIOConcurrencyHelpers

/// Follows every log source of a service type and puts their records into the store before acknowledging them, so a
/// source's spool lets go only of what the console kept. After a restart it continues each stream after the last
/// record stored (``ConsoleStore/positions()``): across a crash of the app or of the console, every sequence number is
/// stored once.
final class ConsoleCollector: Sendable {
    private let store: ConsoleStore
    private let viewerConfiguration: LogViewerConfiguration
    private let notifier: ChangeNotifier
    private let logger: Logger
    private let live = NIOLockedValueBox<[String: LogSourceInfo]>([:])
    private let status = NIOLockedValueBox<String?>(nil)

    init(store: ConsoleStore, viewer: LogViewerConfiguration, notifier: ChangeNotifier, logger: Logger) {
        self.store = store
        self.viewerConfiguration = viewer
        self.notifier = notifier
        self.logger = logger
    }

    /// The streams followed right now.
    var liveStreams: Set<String> { live.withLockedValue { Set($0.keys) } }

    /// What the collector waits for, when it waits (no DNS-SD daemon, a source refusing us), for the page.
    var problem: String? { status.withLockedValue { $0 } }

    /// Collects until the task is cancelled. A store that fails (a full disk) stops the viewer without acknowledging
    /// the batch; it starts again a second later from what the store holds, and the sources send the rest again.
    func run() async {
        while !Task.isCancelled {
            do {
                var configuration = viewerConfiguration
                configuration.follow = true
                configuration.history = Int(Int32.max)  // everything the sources still have
                configuration.resumeAfter = try await store.positions()
                try await LogViewer(configuration: configuration).run { [self] event in try await handle(event) }
            } catch is CancellationError {
                break
            } catch {
                if Task.isCancelled { break }
                logger.error("collecting stopped, starting again in 1 s", metadata: ["error": "\(error)"])
                status.withLockedValue { $0 = "collecting stopped: \(error)" }
            }
            live.withLockedValue { $0 = [:] }
            notifier.notify(.sources)
            try? await Task.sleep(for: .seconds(1))
        }
    }

    private func handle(_ event: LogViewerEvent) async throws {
        switch event {
        case .records(let records, let source):
            try await store.insert(records, from: source)
            notifier.notify(.records)
        case .following(let source, let resumed):
            live.withLockedValue { $0[source.streamID] = source }
            status.withLockedValue { $0 = nil }
            logger.info("following", metadata: ["source": "\(source)", "resumed": "\(resumed)"])
            notifier.notify(.sources)
        case .sourceLost(let source):
            live.withLockedValue { $0[source.streamID] = nil }
            notifier.notify(.sources)
        case .lost(let loss, let source):
            try await store.noteLost(loss, from: source)
            logger.warning(
                "a source lost records",
                metadata: ["source": "\(source)", "count": "\(loss.count)", "reason": "\(loss.reason)"])
            notifier.notify(.sources)
        case .refused(let refusal):
            status.withLockedValue { $0 = refusal.description }
            logger.warning("a source refused the console", metadata: ["refusal": "\(refusal)"])
        case .discoveryUnavailable(let message):
            status.withLockedValue { $0 = message }
            logger.warning("\(message)")
        case .problem(let message):
            logger.warning("\(message)")
        case .waiting, .historyComplete:
            break
        }
    }
}
