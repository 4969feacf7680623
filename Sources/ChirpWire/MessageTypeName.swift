import ChirpSupport
import Foundation

/// A message type that names itself on the wire.
///
/// Chirp routes messages by a type name. Without this protocol the name is `String(reflecting: T.self)`, the
/// module-qualified name (`ListrCommands.AddItem`), so types with the same name in different modules never collide.
/// Conform to give a name that stays stable across renames and modules, or that peers in other languages use:
///
/// ```swift
/// struct AddItem: Codable, ChirpMessage {
///     static let chirpTypeName = "listr.add-item"
///     var title: String
/// }
/// ```
public protocol ChirpMessage {
    /// The name this type travels under. 1-1024 bytes of UTF-8.
    static var chirpTypeName: String { get }
}

/// Looks up (and caches) the wire name of message types.
package enum MessageTypeName {
    /// The wire name of `Data` (a binary payload, and every command reply): stable across platforms, where
    /// `String(reflecting: Data.self)` is `FoundationEssentials.Data` on Linux and `Foundation.Data` on macOS.
    package static let data = "chirp.data"
    /// The names `Data` travelled under before it had ``data`` (protocol 1 before 2026-11), accepted on receipt.
    package static let legacyDataNames: Set<String> = ["FoundationEssentials.Data", "Foundation.Data"]

    /// The name a received type name is routed under: ``data`` for the old names of `Data`, else the name itself.
    ///
    /// On every message received: a name whose length is not that of an old name is not hashed.
    package static func routed(_ typeName: String) -> String {
        guard legacyDataNameLengths.contains(typeName.utf8.count) else { return typeName }
        return legacyDataNames.contains(typeName) ? data : typeName
    }

    private static let legacyDataNameLengths = Set(legacyDataNames.map(\.utf8.count))

    /// The name `type` travels under: resolved and checked once per type on each thread and kept in that thread's
    /// ``CodingScratch``, so that sending takes no process-wide lock and checks nothing per message.
    /// - Throws: ``ChirpError/Code/invalidTypeName`` when the wire cannot carry the name.
    package static func of<T>(_ type: T.Type) throws -> String {
        if type == Data.self { return data }
        return try CodingScratch.forThisThread.typeName(of: type) { try checked(resolve(type), of: type) }
    }

    /// `name` when a frame can carry it: 1-``WireFormat/maxTypeNameLength`` bytes (a frame gives the name two length
    /// bytes, and a receiver refuses a longer one as a protocol violation). Swift strings are valid UTF-8 already.
    /// - Throws: ``ChirpError/Code/invalidTypeName``, naming `type` when there is one (`nil` for Chirp's
    ///   `RawMessage`).
    package static func checked(_ name: String, of type: Any.Type?) throws -> String {
        let length = name.utf8.count
        guard length == 0 || length > WireFormat.maxTypeNameLength else { return name }
        let swiftType = type.map { String(reflecting: $0) }
        let problem = length == 0 ? "it is empty" : "it is \(length) bytes long"
        throw ChirpError.invalidTypeName(name, swiftType: swiftType, problem: problem)
    }

    /// The name `type` travels under, worked out (a dynamic cast, and for most types `String(reflecting:)`).
    private static func resolve<T>(_ type: T.Type) -> String {
        if let named = type as? any ChirpMessage.Type { return named.chirpTypeName }
        return String(reflecting: type)
    }
}
