import ChirpSupport
import Dispatch
import NIOConcurrencyHelpers

/// Delivers ``TransceiverEvent``s in order, on one serial queue, to ``Transceiver/availablePeersDidChange`` and to
/// every ``Transceiver/makeEvents()`` stream. Emitting never blocks and never runs user code on the caller's thread.
final class EventHub: Sendable {
    private struct State {
        var availablePeersDidChange: (@Sendable ([Peer]) -> Void)?
        var streams: [UInt64: AsyncStream<TransceiverEvent>.Continuation] = [:]
        var nextID: UInt64 = 0
    }

    private let queue = DispatchQueue(label: "chirp.events")
    private let state = NIOLockedValueBox(State())

    /// The callback of ``Transceiver/availablePeersDidChange``.
    var availablePeersDidChange: (@Sendable ([Peer]) -> Void)? { state.withLockedValue { $0.availablePeersDidChange } }

    func setAvailablePeersDidChange(_ callback: (@Sendable ([Peer]) -> Void)?) {
        state.withLockedValue { $0.availablePeersDidChange = callback }
    }

    /// A new stream that receives every event emitted from now on.
    func makeStream() -> AsyncStream<TransceiverEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: TransceiverEvent.self, bufferingPolicy: .unbounded)
        let id = state.withLockedValue { state in
            state.nextID += 1
            state.streams[state.nextID] = continuation
            return state.nextID
        }
        continuation.onTermination = { [weak self] _ in
            self?.state.withLockedValue { _ = $0.streams.removeValue(forKey: id) }
        }
        return stream
    }

    /// The streams end with the transceiver: a task iterating one is not left waiting for events that cannot come.
    deinit {
        for continuation in state.withLockedValue({ Array($0.streams.values) }) { continuation.finish() }
    }

    func emit(_ event: TransceiverEvent) {
        queue.async { self.deliver(event) }
    }

    /// Runs `body` on the event queue after every event emitted so far was delivered.
    func afterPendingEvents(_ body: @escaping @Sendable () -> Void) {
        queue.async(execute: body)
    }

    private func deliver(_ event: TransceiverEvent) {
        let (callback, streams) = state.withLockedValue { ($0.availablePeersDidChange, Array($0.streams.values)) }
        if case .availablePeersChanged(let peers) = event { callback?(peers) }
        for continuation in streams { continuation.yield(event) }
    }
}
