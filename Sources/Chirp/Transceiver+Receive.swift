import ChirpSupport
import ChirpWire
import NIOCore

/// A message and who sent it, as yielded by ``Transceiver/messages(of:)``.
public struct ReceivedMessage<Payload: Sendable>: Sendable {
    /// The decoded message.
    public var payload: Payload
    /// The peer that sent it.
    public var sender: Peer
}

/// Returned by `receive`; call ``cancel()`` to remove the handler. Handlers stay registered while the token is alive
/// or not; dropping the token does not remove the handler.
///
/// ```swift
/// let token = try transceiver.receive(ChatLine.self) { line, sender in print(line.text) }
/// // ...
/// token.cancel()
/// ```
public struct HandlerToken: Sendable {
    private let router: Router
    private let token: UInt64

    init(router: Router, token: UInt64) {
        self.router = router
        self.token = token
    }

    /// Removes the handler.
    public func cancel() { router.removeHandler(token: token) }
}

extension Transceiver {
    /// Calls `handler` for every message of type `T`, with its sender.
    ///
    /// ```swift
    /// try transceiver.receive(AddItem.self) { item, sender in
    ///     print("\(sender.name) added \(item.title)")
    /// }
    /// ```
    ///
    /// Several handlers may be registered for one type; they run in the order they were registered. Handlers run on
    /// the connection's event loop, one message at a time per peer and in the order the peer sent them (a message
    /// over 128 KiB once it has arrived whole: smaller ones sent after it may come first, see ``send(_:to:)-1sz75``):
    /// keep them short, and hand longer work to a task or use ``messages(of:)``. A payload that does not decode as `T`, and a
    /// handler that throws, are reported as ``TransceiverEvent/error(_:)`` events and logged.
    ///
    /// With `RawMessage.self`, `handler` gets every message, whatever its type, as it came (after the typed handlers
    /// of its type): what `chirp listen` prints.
    ///
    /// - Throws: ``/ChirpSupport/ChirpError/Code/invalidTypeName`` when `T`'s wire name cannot travel (empty, or over
    ///   1,024 bytes); ``/ChirpSupport/ChirpError/Code/typeNameConflict`` when another Swift type has a handler or a
    ///   responder under that name (the messages of one name decode as one type).
    @discardableResult
    public func receive<T: Decodable & Sendable>(
        _ type: T.Type, handler: @escaping @Sendable (_ payload: T, _ sender: Peer) throws -> Void
    ) throws -> HandlerToken {
        if T.self == RawMessage.self {
            let token = router.addWildcardHandler { message, delivery, _ in
                do {
                    // T is RawMessage: the cast always succeeds.
                    if let raw = RawMessage(message) as? T { try handler(raw, delivery.peer) }
                } catch {
                    throw ChirpError.handlerFailed(
                        type: message.typeName, peer: delivery.peer, reason: "\(error)", cause: error)
                }
            }
            return HandlerToken(router: router, token: token)
        }
        let typeName = try MessageTypeName.of(type)
        let token = try router.addHandler(for: typeName, type: T.self) { message, delivery, coder in
            let peer = delivery.peer
            let value: T
            do {
                value = try PayloadCoding.decode(T.self, from: message, coder: coder)
            } catch {
                throw ChirpError.decodingFailed(type: typeName, peer: peer, reason: "\(error)", cause: error)
            }
            do {
                try handler(value, peer)
            } catch {
                throw ChirpError.handlerFailed(type: typeName, peer: peer, reason: "\(error)", cause: error)
            }
        }
        return HandlerToken(router: router, token: token)
    }

    /// The messages of one wire name as they came, for the libraries of this package that define message kinds of
    /// their own (ChirpFiles' chunks, raw bytes under `chirp.file.chunk`): a handler of that name only, where
    /// ``receive(_:handler:)`` with `RawMessage.self` would copy and look at every message of the transceiver, and
    /// would take the wildcard an app may want for itself. Not public: an app's messages are Swift types.
    /// - Throws: ``/ChirpSupport/ChirpError/Code/typeNameConflict`` when a Swift type has a handler under that name.
    @discardableResult
    package func receiveRaw(
        typeName: String, handler: @escaping @Sendable (_ message: RawMessage, _ sender: Peer) throws -> Void
    ) throws -> HandlerToken {
        let token = try router.addHandler(for: typeName, type: RawMessage.self) { message, delivery, _ in
            do {
                try handler(RawMessage(message), delivery.peer)
            } catch {
                throw ChirpError.handlerFailed(
                    type: typeName, peer: delivery.peer, reason: "\(error)", cause: error)
            }
        }
        return HandlerToken(router: router, token: token)
    }

    /// Every message of type `T` from now on, with its sender, as an async sequence.
    ///
    /// ```swift
    /// for await message in try transceiver.messages(of: ChatLine.self) {
    ///     print("[\(message.sender.name)] \(message.payload.text)")
    /// }
    /// ```
    ///
    /// Nothing is lost and the buffer is bounded: while ``Configuration/Backpressure/highWatermark`` messages wait
    /// for the consumer, Chirp stops reading from the peers that send them, so TCP slows the senders down (see
    /// ``MessageSequence``). A payload that does not decode as `T` is reported as an ``TransceiverEvent/error(_:)``
    /// event, as with ``receive(_:handler:)-(_,(T,Peer)->Void)``. The sequence ends, and its handler is removed, when
    /// the iterating task is cancelled. With `RawMessage.self`, every message, whatever its type.
    ///
    /// - Throws: what ``receive(_:handler:)-(_,(T,Peer)->Void)`` throws.
    public func messages<T: Decodable & Sendable>(of type: T.Type) throws -> MessageSequence<T> {
        if T.self == RawMessage.self {
            return makeMessageSequence { flow, source in
                self.router.addWildcardHandler { message, delivery, _ in
                    // T is RawMessage: the cast always succeeds.
                    guard let raw = RawMessage(message) as? T else { return }
                    flow.deliver(
                        ReceivedMessage(payload: raw, sender: delivery.peer), to: source, from: delivery.connection,
                        gate: delivery.gate)
                }
            }
        }
        let typeName = try MessageTypeName.of(type)
        return try makeMessageSequence { flow, source in
            try self.router.addHandler(for: typeName, type: T.self) { message, delivery, coder in
                let value: T
                do {
                    value = try PayloadCoding.decode(T.self, from: message, coder: coder)
                } catch {
                    throw ChirpError.decodingFailed(
                        type: typeName, peer: delivery.peer, reason: "\(error)", cause: error)
                }
                flow.deliver(
                    ReceivedMessage(payload: value, sender: delivery.peer), to: source, from: delivery.connection,
                    gate: delivery.gate)
            }
        }
    }

    /// A ``MessageSequence`` fed by the handler `register` adds (given the flow and the source to deliver to); the
    /// handler is removed when the consumer goes away.
    func makeMessageSequence<T: Sendable>(
        _ register: (MessageFlow, MessageSequence<T>.Producer.Source) throws -> UInt64
    ) rethrows -> MessageSequence<T> {
        let backpressure = configuration.backpressure
        let flow = MessageFlow()
        let new = MessageSequence<T>.Producer.makeSequence(
            backPressureStrategy: .init(
                lowWatermark: backpressure.lowWatermark, highWatermark: backpressure.highWatermark),
            finishOnDeinit: true, delegate: flow)
        let token = try register(flow, new.source)
        let router = self.router
        flow.onTerminate { router.removeHandler(token: token) }
        return MessageSequence(producer: new.sequence)
    }
}
