import Chirp
import NIOConcurrencyHelpers

/// The viewer's bookkeeping: subscriptions and, per stream, the last sequence number delivered.
final class ViewerState: Sendable {
    private struct Subscription {
        var info: LogSourceInfo
        var peer: Peer
        var ended = false
        var lastHeard = ContinuousClock.now
    }

    private struct State {
        var subscriptions: [UInt64: Subscription] = [:]
        var lastSequence: [String: UInt64] = [:]
        var foundAny = false
        var direct: Set<String> = []
        var refusals: [LogSourceRefusal] = []
    }

    private let state: NIOLockedValueBox<State>

    /// Bookkeeping that continues the streams of `resumeAfter` after the sequence numbers given.
    init(resumeAfter: [String: UInt64] = [:]) {
        var initial = State()
        initial.lastSequence = resumeAfter
        state = NIOLockedValueBox(initial)
    }

    /// Registers a subscription to `peer` unless one exists; returns its id and the last sequence number already
    /// received from the peer's stream.
    func begin(peer: Peer, info: LogSourceInfo) -> (UInt64, UInt64?)? {
        state.withLockedValue { state in
            guard !state.subscriptions.values.contains(where: { $0.peer.id == peer.id }) else { return nil }
            var id = UInt64.random(in: 1...UInt64.max)
            while state.subscriptions[id] != nil { id = UInt64.random(in: 1...UInt64.max) }
            state.subscriptions[id] = Subscription(info: info, peer: peer)
            state.foundAny = true
            return (id, state.lastSequence[info.streamID])
        }
    }

    func source(of subscription: UInt64, peerID: String) -> LogSourceInfo? {
        state.withLockedValue { state in
            guard let entry = state.subscriptions[subscription], entry.peer.id == peerID else { return nil }
            return entry.info
        }
    }

    /// Like ``source(of:peerID:)``, and notes that the subscription is alive.
    func heard(_ subscription: UInt64, peerID: String) -> LogSourceInfo? {
        state.withLockedValue { state in
            guard var entry = state.subscriptions[subscription], entry.peer.id == peerID else { return nil }
            entry.lastHeard = .now
            state.subscriptions[subscription] = entry
            return entry.info
        }
    }

    /// Forgets (and returns) the followed subscriptions nothing was heard about for longer than `limit`.
    func removeSilent(longerThan limit: Duration) -> [(Peer, LogSourceInfo)] {
        state.withLockedValue { state in
            let now = ContinuousClock.now
            var silent: [(Peer, LogSourceInfo)] = []
            for (id, entry) in state.subscriptions where !entry.ended && now - entry.lastHeard > limit {
                state.subscriptions[id] = nil
                silent.append((entry.peer, entry.info))
            }
            return silent
        }
    }

    func subscription(_ id: UInt64) -> (LogSourceInfo, Peer)? {
        state.withLockedValue { state in state.subscriptions[id].map { ($0.info, $0.peer) } }
    }

    /// Keeps the records not delivered before (exactly once); reports a gap the source did not announce.
    func accept(_ records: [LogRecord], stream: String) -> ([LogRecord], LogLoss?) {
        state.withLockedValue { state in
            let last = state.lastSequence[stream]
            let fresh = last.map { last in records.filter { $0.sequence > last } } ?? records
            var gap: LogLoss?
            if let last, let first = fresh.first, first.sequence > last + 1 {
                gap = LogLoss(from: last + 1, through: first.sequence - 1, reason: "missing")
            }
            if let newest = fresh.last?.sequence { state.lastSequence[stream] = newest }
            return (fresh, gap)
        }
    }

    /// A loss notice, trimmed to what was not delivered already; `nil` if nothing is left.
    func acceptLoss(from: UInt64, through: UInt64, reason: String, stream: String) -> LogLoss? {
        state.withLockedValue { state in
            let last = state.lastSequence[stream]
            // A source that already sent the last sequence number there is has nothing left to lose (and `+ 1`
            // would overflow: a peer's numbers are not trusted to stay below it).
            if last == .max { return nil }
            let start = max(from, (last ?? 0) + 1)
            guard through >= start else { return nil }
            state.lastSequence[stream] = through
            return LogLoss(from: start, through: through, reason: reason)
        }
    }

    /// An entry of a batch that did not decode: reported lost, after the gap before it when the source skipped
    /// numbers (as ``accept(_:stream:)`` reports one before a record); nothing for a number already delivered.
    func acceptUndecodable(_ sequence: UInt64, stream: String) -> [LogLoss] {
        state.withLockedValue { state in
            let last = state.lastSequence[stream]
            if let last, sequence <= last { return [] }
            var losses: [LogLoss] = []
            if let last, sequence > last + 1 {  // `last < sequence`, so `last + 1` cannot overflow
                losses.append(LogLoss(from: last + 1, through: sequence - 1, reason: "missing"))
            }
            losses.append(LogLoss(from: sequence, through: sequence, reason: "undecodable"))
            state.lastSequence[stream] = sequence
            return losses
        }
    }

    /// Marks a subscription complete; returns its source.
    func end(_ subscription: UInt64) -> LogSourceInfo? {
        state.withLockedValue { state in
            guard var entry = state.subscriptions[subscription], !entry.ended else { return nil }
            entry.ended = true
            state.subscriptions[subscription] = entry
            return entry.info
        }
    }

    /// Forgets the subscriptions to a disconnected peer; returns the sources that were followed (not ended).
    func drop(peerID: String) -> [LogSourceInfo] {
        state.withLockedValue { state in
            var lost: [LogSourceInfo] = []
            for (id, entry) in state.subscriptions where entry.peer.id == peerID {
                state.subscriptions[id] = nil
                if !entry.ended { lost.append(entry.info) }
            }
            return lost
        }
    }

    /// Whether a subscription to the peer exists (live or ended).
    func hasSubscription(_ peerID: String) -> Bool {
        state.withLockedValue { $0.subscriptions.values.contains { $0.peer.id == peerID } }
    }

    /// Notes a peer reached with `--connect` (the only peers followed then).
    func markDirect(_ peerID: String) {
        state.withLockedValue { _ = $0.direct.insert(peerID) }
    }

    func isDirect(_ peerID: String) -> Bool {
        state.withLockedValue { $0.direct.contains(peerID) }
    }

    /// Every subscription ended (or none exists).
    var isIdle: Bool { state.withLockedValue { $0.subscriptions.values.allSatisfy(\.ended) } }
    /// Whether any source was subscribed to.
    var foundAny: Bool { state.withLockedValue { $0.foundAny } }

    /// Notes a refusal; `false` when the same source was already reported refused for the same reason.
    func noteRefusal(_ refusal: LogSourceRefusal) -> Bool {
        state.withLockedValue { state in
            guard !state.refusals.contains(where: { $0.source == refusal.source && $0.kind == refusal.kind }) else {
                return false
            }
            state.refusals.append(refusal)
            return true
        }
    }

    /// Every refusal noted, in order.
    var refusals: [LogSourceRefusal] { state.withLockedValue { $0.refusals } }
}
