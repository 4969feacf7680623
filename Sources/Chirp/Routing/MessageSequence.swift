import NIOConcurrencyHelpers
import NIOCore

/// The messages of one type, as ``Transceiver/messages(of:)`` delivers them: an async sequence with a bounded buffer.
///
/// When the consumer falls behind and ``Configuration/Backpressure/highWatermark`` messages wait, Chirp stops reading
/// from the peers that send them: their data stays in the sockets, TCP's flow control slows the senders down, and their
/// waiting `try await send` waits, and their throwing `send` throws
/// ``/ChirpSupport/ChirpError/Code/outboundLimitExceeded`` once their outbound limit is reached. Nothing is dropped and
/// nothing is reordered; reading resumes when fewer than ``Configuration/Backpressure/lowWatermark`` wait.
///
/// A sequence has one consumer: iterate it from one task. A second iterator ends at once. The sequence ends, and its
/// handler is removed, when the iterating task is cancelled or the iterator is dropped.
public struct MessageSequence<Payload: Sendable>: AsyncSequence, Sendable {
    public typealias Element = ReceivedMessage<Payload>

    typealias Producer = NIOAsyncSequenceProducer<
        ReceivedMessage<Payload>, NIOAsyncSequenceProducerBackPressureStrategies.HighLowWatermark, MessageFlow
    >

    private let producer: Producer
    private let iterated: NIOLockedValueBox<Bool>

    init(producer: Producer) {
        self.producer = producer
        self.iterated = NIOLockedValueBox(false)
    }

    /// The iterator; only the first one made delivers messages (the sequence is unicast).
    public func makeAsyncIterator() -> AsyncIterator {
        let first = iterated.withLockedValue { iterated in
            defer { iterated = true }
            return !iterated
        }
        return AsyncIterator(first ? producer.makeAsyncIterator() : nil)
    }

    /// Iterates a ``MessageSequence``.
    public struct AsyncIterator: AsyncIteratorProtocol {
        private var base: Producer.AsyncIterator?

        init(_ base: Producer.AsyncIterator?) {
            self.base = base
        }

        /// The next message, or `nil` once the sequence ended (or the task was cancelled).
        public mutating func next() async -> ReceivedMessage<Payload>? {
            await base?.next()
        }
    }
}

/// The producing side of a ``MessageSequence``: yields what the router delivers, stops the delivering connection's
/// reads (its ``ReadPause``, the "gate") when the buffer is full, and opens every gate it closed when the consumer asks
/// for more.
///
/// Yielding and remembering a closed gate happen under one lock, and so does `produceMore`: a consumer that drains
/// the buffer between a "stop producing" answer and the gate being recorded cannot leave a connection unread.
final class MessageFlow: NIOAsyncSequenceProducerDelegate, Sendable {
    private struct State {
        /// Gates closed by this flow, by connection.
        var closed: [ObjectIdentifier: any ReadPause] = [:]
        var terminated = false
        /// Removes the handler that feeds this flow (set once it is registered).
        var onTerminate: (@Sendable () -> Void)?
    }

    private let state = NIOLockedValueBox(State())

    /// This flow's key at the gates it closes.
    private var key: ObjectIdentifier { ObjectIdentifier(self) }

    /// Sets what to do when the consumer goes away (remove the feeding handler); runs it at once if it already did.
    func onTerminate(_ body: @escaping @Sendable () -> Void) {
        let runNow = state.withLockedValue { state -> Bool in
            if state.terminated { return true }
            state.onTerminate = body
            return false
        }
        if runNow { body() }
    }

    /// Delivers `element`; when the buffer is now full, stops reading from the connection behind `gate`.
    func deliver<Payload>(
        _ element: ReceivedMessage<Payload>, to source: MessageSequence<Payload>.Producer.Source,
        from connection: ObjectIdentifier, gate: (any ReadPause)?
    ) {
        let close: (any ReadPause)? = state.withLockedValue { state in
            switch source.yield(element) {
            case .produceMore, .dropped:
                return nil
            case .stopProducing:
                guard let gate, !state.terminated, state.closed[connection] == nil else { return nil }
                state.closed[connection] = gate
                return gate
            }
        }
        close?.close(for: key)
    }

    func produceMore() {
        let reopen = state.withLockedValue { state in
            defer { state.closed = [:] }
            return Array(state.closed.values)
        }
        for gate in reopen { gate.open(for: key) }
    }

    func didTerminate() {
        let (reopen, onTerminate) = state.withLockedValue { state in
            state.terminated = true
            defer {
                state.closed = [:]
                state.onTerminate = nil
            }
            return (Array(state.closed.values), state.onTerminate)
        }
        for gate in reopen { gate.open(for: key) }
        onTerminate?()
    }
}
