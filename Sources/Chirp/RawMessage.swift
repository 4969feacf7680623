import ChirpWire
import Foundation
import NIOCore

/// A message as bytes and a type name, for tools that do not know the message types at compile time
/// (`chirp send`, `chirp listen`, bridges to other languages).
///
/// Wherever a message type goes, `RawMessage.self` goes too, and means "whatever the type":
///
/// ```swift
/// // Every message received, whatever its type (after the typed handlers of that type).
/// try transceiver.receive(RawMessage.self) { message, sender in
///     print(sender.name, message.typeName, String(decoding: message.payload, as: UTF8.self))
/// }
/// // A message sent under its own type name, its payload as it is.
/// try transceiver.send(RawMessage(typeName: "chat.line", payload: Data(#"{"text":"hi"}"#.utf8)), to: .all)
/// ```
///
/// The same goes for ``Transceiver/messages(of:)`` and for ``Transceiver/request(_:to:as:timeout:)``, whose
/// `as: RawMessage.self` returns the reply as it came. Inside another message, a `RawMessage` is an ordinary
/// `Codable` value (an object with these three fields).
public struct RawMessage: Sendable, Equatable, Codable {
    /// The type name it travels under (see ``/ChirpWire/ChirpMessage``): 1-1,024 bytes of UTF-8.
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
