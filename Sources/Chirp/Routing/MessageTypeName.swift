import NIOConcurrencyHelpers

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
enum MessageTypeName {
    private static let cache = NIOLockedValueBox<[ObjectIdentifier: String]>([:])

    /// The name `type` travels under.
    static func of<T>(_ type: T.Type) -> String {
        let key = ObjectIdentifier(type)
        if let name = cache.withLockedValue({ $0[key] }) { return name }
        let name: String
        if let named = type as? any ChirpMessage.Type {
            name = named.chirpTypeName
        } else {
            name = String(reflecting: type)
        }
        cache.withLockedValue { $0[key] = name }
        return name
    }
}
