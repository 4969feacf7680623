import ChirpSupport
import ChirpWire
import Foundation
import NIOCore

/// A message as bytes and a type name, for tools that do not know the message types at compile time
/// (`chirp send`, `chirp listen`, bridges to other languages).
public struct RawMessage: Sendable, Equatable {
    /// The type name it travels under (see ``ChirpMessage``).
    public var typeName: String
    /// The payload: the coder's output (JSON by default), or raw bytes when ``isBinary``.
    public var payload: Data
    /// Whether the payload is raw bytes (a `Data` message) rather than coder output.
    public var isBinary: Bool

    /// Creates a raw message.
    public init(typeName: String, payload: Data, isBinary: Bool = false) {
        self.typeName = typeName
        self.payload = payload
        self.isBinary = isBinary
    }

    init(_ body: MessageBody) {
        self.init(
            typeName: body.typeName, payload: Data(body.payload.readableBytesView),
            isBinary: body.flags.contains(.binary))
    }
}

extension Transceiver {
    /// Calls `handler` for every message received, whatever its type, after the typed handlers of that type.
    ///
    /// ```swift
    /// transceiver.receiveAll { message, sender in
    ///     print(sender.name, message.typeName, String(decoding: message.payload, as: UTF8.self))
    /// }
    /// ```
    @discardableResult
    public func receiveAll(_ handler: @escaping @Sendable (_ message: RawMessage, _ sender: Peer) throws -> Void)
        -> HandlerToken
    {
        let token = router.addWildcardHandler { message, delivery, _ in
            do {
                try handler(RawMessage(message), delivery.peer)
            } catch {
                throw ChirpError.handlerFailed(
                    type: message.typeName, peer: delivery.peer, reason: "\(error)", cause: error)
            }
        }
        return HandlerToken(router: router, token: token)
    }

    /// Every message received from now on, whatever its type, as an async sequence that stops reading from the
    /// senders while it is full (see ``MessageSequence``): what `chirp listen` prints.
    ///
    /// ```swift
    /// for await message in transceiver.allMessages() {
    ///     print(message.sender.name, message.payload.typeName)
    /// }
    /// ```
    public func allMessages() -> MessageSequence<RawMessage> {
        makeMessageSequence { flow, source in
            self.router.addWildcardHandler { message, delivery, _ in
                flow.deliver(
                    ReceivedMessage(payload: RawMessage(message), sender: delivery.peer), to: source,
                    from: delivery.connection, gate: delivery.gate)
            }
        }
    }

    /// Sends a raw message to every connected peer.
    public func broadcast(_ message: RawMessage) throws {
        guard let engine = currentEngine else { throw ChirpError.notRunning }
        let connections = engine.connections
        guard let first = connections.first else { return }
        let frame = try PayloadCoding.frame(
            message, allocator: first.allocator, limit: configuration.maximumMessageSize)
        enqueue(frame, on: connections, engine: engine)
    }

    /// Sends a raw message to one peer.
    public func send(_ message: RawMessage, to peer: Peer) throws {
        let connection = try connection(to: peer)
        let frame = try PayloadCoding.frame(
            message, allocator: connection.allocator, limit: configuration.maximumMessageSize)
        try enqueue(frame, on: connection)
    }

    /// Sends a raw request to `peer` and returns its raw reply; throws as ``request(_:to:as:timeout:)`` does
    /// (`CancellationError` at once when the task is cancelled).
    public func request(_ message: RawMessage, to peer: Peer, timeout: Duration? = nil) async throws -> RawMessage {
        let (reply, _) = try await retryingIfNotSent(peer) { connection in
            let id = connection.makeRequestID()
            let frame = try PayloadCoding.frame(
                message, requestID: id, allocator: connection.allocator, limit: self.configuration.maximumMessageSize)
            return try await self.exchange(frame, id: id, typeName: message.typeName, on: connection, timeout: timeout)
        }
        return RawMessage(reply)
    }
}
