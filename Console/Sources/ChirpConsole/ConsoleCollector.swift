import Chirp
import ChirpLogs
import Foundation
import Logging
import NIOConcurrencyHelpers

/// Follows every log source of a service type and puts their records into the store before acknowledging them, so a
/// source's spool lets go only of what the console kept. After a restart it continues each stream after the last
/// record stored (``ConsoleStore/positions()``): across a crash of the app or of the console, every sequence number is
/// stored once.
///
/// It also keeps whether the console trusts each source that uses a device identity (``trust``): the viewer's verdict,
/// which lives here only. The source's fingerprint is the store's (``ConsoleStore/noteFingerprint(_:of:now:)``), as
/// the viewer's connection proved it (``LogSourceInfo/fingerprint``; for a refused source, the one it advertised).
final class ConsoleCollector: Sendable {
    private let store: ConsoleStore
    private let viewerConfiguration: LogViewerConfiguration
    private let notifier: ChangeNotifier
    private let logger: Logger
    private let live = NIOLockedValueBox<[String: LogSourceInfo]>([:])
    private let status = NIOLockedValueBox<String?>(nil)
    /// The trust verdict per stream, and the peer id it was given to (for the Peers tab).
    private let verdicts = NIOLockedValueBox<[String: (peerID: String, trust: SourceTrust)]>([:])

    init(
        store: ConsoleStore, viewer: LogViewerConfiguration, notifier: ChangeNotifier, logger: Logger
    ) {
        self.store = store
        self.viewerConfiguration = viewer
        self.notifier = notifier
        self.logger = logger
    }

    /// The streams followed right now.
    var liveStreams: Set<String> { live.withLockedValue { Set($0.keys) } }

    /// Whether the console trusts each stream's source, as last found (it stays after the source went away): only
    /// for sources that use a device identity and that the viewer followed or was refused by.
    var trust: [String: SourceTrust] { verdicts.withLockedValue { $0.mapValues { $0.trust } } }

    /// The verdict on the source that is the peer `peerID`, if any.
    func trust(ofPeer peerID: String) -> SourceTrust? {
        verdicts.withLockedValue { $0.values.first { $0.peerID == peerID }?.trust }
    }

    /// Whether the console's viewer uses a device identity: it then follows only sources that use one.
    private var usesIdentity: Bool {
        if case .identity = viewerConfiguration.security { return true }
        return false
    }

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
            // With a device identity the viewer connected only through mutual TLS, the source's certificate being
            // the fingerprint it advertised: that fingerprint is proven, and each side accepted the other.
            // A source followed again in the same run (a subscription renewed) has its verdict and fingerprint already.
            let known = verdicts.withLockedValue { $0[source.streamID] }
            let renewed = known?.peerID == source.peerID && known?.trust == .trusted
            if usesIdentity, !renewed, let fingerprint = source.fingerprint {
                try await store.noteFingerprint(fingerprint, of: source)
                verdicts.withLockedValue { $0[source.streamID] = (source.peerID, .trusted) }
            }
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
            // A source with a device identity that refused the viewer, or that the viewer refused: listed, not trusted.
            if let source = refusal.info, let fingerprint = source.fingerprint {
                try await store.noteFingerprint(fingerprint, of: source)
                verdicts.withLockedValue { $0[source.streamID] = (source.peerID, .notTrusted) }
                notifier.notify(.sources)
            }
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
