import Foundation

/// How a ``CommandResponse`` travels: the payload of a binary Chirp reply, one kind byte followed by the body.
///
///     0x74 't'  text      body: UTF-8 text
///     0x64 'd'  data      body: the bytes as they are
///     0x66 'f'  failure   body: UTF-8 message
///
/// Binary, so that a file's bytes travel without base64 or JSON overhead. Documented in Docs/Commands.md.
extension CommandResponse {
    enum Kind: UInt8 {
        case text = 0x74
        case data = 0x64
        case failure = 0x66
        /// Not a ``CommandResponse``: the app refused the command because the sender lacks a permission (device
        /// identities only, which older CLIs cannot use). The text says which.
        case denied = 0x6E
    }

    /// The reply refusing a command for lack of a permission, with its sentence.
    static func denied(_ message: String) -> Data {
        var bytes = Data([Kind.denied.rawValue])
        bytes.append(contentsOf: message.utf8)
        return bytes
    }

    /// The sentence of a reply that refuses a command for lack of a permission; nil for any other reply.
    package static func deniedMessage(in bytes: Data) -> String? {
        guard bytes.first == Kind.denied.rawValue else { return nil }
        return String(decoding: bytes.dropFirst(), as: UTF8.self)
    }

    /// The response as reply bytes.
    func encoded() -> Data {
        var bytes = Data()
        switch self {
        case .text(let text):
            bytes.reserveCapacity(1 + text.utf8.count)
            bytes.append(Kind.text.rawValue)
            bytes.append(contentsOf: text.utf8)
        case .data(let data):
            bytes.reserveCapacity(1 + data.count)
            bytes.append(Kind.data.rawValue)
            bytes.append(data)
        case .failure(let message):
            bytes.reserveCapacity(1 + message.utf8.count)
            bytes.append(Kind.failure.rawValue)
            bytes.append(contentsOf: message.utf8)
        }
        return bytes
    }

    /// Decodes reply bytes (`package`: `chirp send --request` shows a command reply with it).
    /// - Throws: ``CommandResponseDecodingError`` when the bytes are empty, of an unknown kind, or not UTF-8 where
    ///   text is expected.
    package init(encoded bytes: Data) throws(CommandResponseDecodingError) {
        guard let first = bytes.first else { throw .empty }
        guard let kind = Kind(rawValue: first) else { throw .unknownKind(first) }
        let body = bytes.dropFirst()
        switch kind {
        case .data:
            self = .data(Data(body))
        case .denied:
            throw .unknownKind(first)  // answered by `deniedMessage(in:)` before a response is decoded
        case .text, .failure:
            guard let text = String(validating: body, as: UTF8.self) else { throw .invalidUTF8 }
            self = kind == .text ? .text(text) : .failure(text)
        }
    }
}

/// A reply that is not a valid encoded ``CommandResponse``.
package enum CommandResponseDecodingError: Error, Equatable, CustomStringConvertible {
    case empty
    case unknownKind(UInt8)
    case invalidUTF8

    package var description: String {
        switch self {
        case .empty: return "the reply is empty"
        case .unknownKind(let byte): return "the reply has an unknown kind byte 0x\(String(byte, radix: 16))"
        case .invalidUTF8: return "the reply's text is not valid UTF-8"
        }
    }
}
