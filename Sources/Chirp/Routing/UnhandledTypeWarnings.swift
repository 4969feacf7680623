import ChirpSupport
import ChirpWire

/// The warning for messages nobody handles: once per type name and peer, naming the types registered here that have
/// the same short name.
///
/// The usual cause is two programs that each declare `struct ChatLine: Codable` without ``ChirpMessage``: each sends it
/// under its own module's name (`chat.ChatLine`, `chatbot.ChatLine`), and neither ever receives the other's lines.
/// That deserves a warning a developer sees at once, not a debug line; but a peer can send any number of type names,
/// so what is remembered is bounded.
struct UnhandledTypeWarnings: Sendable {
    /// How many (type name, peer) pairs are remembered; past it, no more warnings are logged.
    static let limit = 256

    private struct Key: Hashable {
        var typeName: String
        var peerID: String
    }

    private var warned: Set<Key> = []

    /// Whether a message of `typeName` from `peerID` with no handler should be warned about: the first time for that
    /// pair, while fewer than ``limit`` pairs were warned about.
    mutating func shouldWarn(typeName: String, peerID: String) -> Bool {
        guard warned.count < Self.limit else { return false }
        return warned.insert(Key(typeName: typeName, peerID: peerID)).inserted
    }

    /// Whether the limit was reached with this warning (the last one logged says so).
    var isFull: Bool { warned.count >= Self.limit }

    /// The part of a type name after its last dot: `ChatLine` for `chat.ChatLine`, the whole name if it has none.
    static func shortName(_ typeName: String) -> Substring {
        guard let dot = typeName.lastIndex(of: ".") else { return typeName[...] }
        return typeName[typeName.index(after: dot)...]
    }

    /// The registered type names (handlers and responders) that have the same short name as `typeName`.
    static func lookalikes(of typeName: String, among registered: some Sequence<String>) -> [String] {
        let short = shortName(typeName)
        return registered.filter { $0 != typeName && shortName($0) == short }.sorted()
    }

    /// The warning's text; `typeName` and `peer` come from the network and are escaped.
    static func message(typeName: String, peer: Peer, lookalikes: [String], isLast: Bool) -> String {
        let shown = UntrustedText.escaped(typeName)
        var text = "no handler for messages of type '\(shown)' from \(peer); they are dropped."
        if lookalikes.isEmpty {
            text +=
                " Register one with receive(_:handler:) here, or check the type's name on the sender:"
                + " a type that does not conform to ChirpMessage travels as '<Module>.<Type>'."
        } else {
            let names = lookalikes.map { "'\(UntrustedText.escaped($0))'" }.joined(separator: ", ")
            text +=
                " A handler is registered for \(names), with the same short name: the two programs name the type"
                + " differently (Swift puts the module's name before a type's). Give the type one name on both sides"
                + " with ChirpMessage: static let chirpTypeName = \"\(UntrustedText.escaped(String(shortName(typeName))))\"."
        }
        if isLast {
            text += " (No further unhandled types are reported: \(limit) were.)"
        }
        return text
    }
}
