import ChirpSupport
import Dispatch
import NIOConcurrencyHelpers

/// Delivers ``TransceiverEvent``s in order, on one serial queue, to the callback properties and to every
/// ``Transceiver/events`` stream. Emitting never blocks and never runs user code on the caller's thread.
final class EventHub: Sendable {
    struct Callbacks: Sendable {
        var availablePeersDidChange: (@Sendable ([Peer]) -> Void)?
        var peerAdded: (@Sendable (Peer) -> Void)?
        var peerRemoved: (@Sendable (Peer) -> Void)?
        var peerConnected: (@Sendable (Peer) -> Void)?
        var peerDisconnected: (@Sendable (Peer) -> Void)?
    }

    private struct State {
        var callbacks = Callbacks()
        var streams: [UInt64: AsyncStream<TransceiverEvent>.Continuation] = [:]
        var nextID: UInt64 = 0
    }

    private let queue = DispatchQueue(label: "chirp.events")
    private let state = NIOLockedValueBox(State())

    func updateCallbacks(_ update: (inout Callbacks) -> Void) {
        state.withLockedValue { update(&$0.callbacks) }
    }

    var callbacks: Callbacks { state.withLockedValue { $0.callbacks } }

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

    func emit(_ event: TransceiverEvent) {
        queue.async { self.deliver(event) }
    }

    /// Runs `body` on the event queue after every event emitted so far was delivered.
    func afterPendingEvents(_ body: @escaping @Sendable () -> Void) {
        queue.async(execute: body)
    }

    private func deliver(_ event: TransceiverEvent) {
        let (callbacks, streams) = state.withLockedValue { ($0.callbacks, Array($0.streams.values)) }
        switch event {
        case .peerAdded(let peer): callbacks.peerAdded?(peer)
        case .peerRemoved(let peer): callbacks.peerRemoved?(peer)
        case .peerConnected(let peer): callbacks.peerConnected?(peer)
        case .peerDisconnected(let peer): callbacks.peerDisconnected?(peer)
        case .availablePeersChanged(let peers): callbacks.availablePeersDidChange?(peers)
        default: break
        }
        for continuation in streams { continuation.yield(event) }
    }
}
