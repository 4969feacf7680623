import ChirpCommands
import Foundation

// The commands listrctl sends and listr answers. Each has a wire name that never changes (see ChirpCommand), so an
// older listrctl keeps working with a newer listr.

/// Lists the items. Answer: text, one line per item. It only reads: sent again when the connection drops before the
/// reply.
public struct ListItems: ChirpCommand, IdempotentRequest {
    /// The wire name; never change it.
    public static let chirpTypeName = "listr.item.list"
    /// Creates the command.
    public init() {}
}

/// Adds an item. Answer: text naming the new item and its id.
public struct AddItem: ChirpCommand {
    /// The wire name; never change it.
    public static let chirpTypeName = "listr.item.add"
    /// The item's text.
    public var title: String
    /// Creates the command.
    public init(title: String) { self.title = title }
}

/// Marks an item as done. Answer: text; a failure when there is no such item.
public struct CompleteItem: ChirpCommand {
    /// The wire name; never change it.
    public static let chirpTypeName = "listr.item.done"
    /// The item's id, as `item list` shows it.
    public var id: Int
    /// Creates the command.
    public init(id: Int) { self.id = id }
}

/// Removes an item. Answer: text; a failure when there is no such item.
public struct RemoveItem: ChirpCommand {
    /// The wire name; never change it.
    public static let chirpTypeName = "listr.item.remove"
    /// The item's id, as `item list` shows it.
    public var id: Int
    /// Creates the command.
    public init(id: Int) { self.id = id }
}

/// Asks for the whole store. Answer: data, the store file's bytes (see ``StoreFile``). It only reads: sent again when
/// the connection drops before the reply.
public struct DumpStore: ChirpCommand, IdempotentRequest {
    /// The wire name; never change it.
    public static let chirpTypeName = "listr.store.dump"
    /// Creates the command.
    public init() {}
}

/// Replaces the whole store. The app validates `contents` first; a bad file changes nothing. Answer: text.
public struct ReplaceStore: ChirpCommand {
    /// The wire name; never change it.
    public static let chirpTypeName = "listr.store.replace"
    /// The new store file's bytes (see ``StoreFile``).
    public var contents: Data
    /// Creates the command.
    public init(contents: Data) { self.contents = contents }
}

/// For tests: the app waits `seconds` before it answers. Served only when listr runs with
/// `--enable-debug-commands`.
public struct HoldCommand: ChirpCommand {
    /// The wire name; never change it.
    public static let chirpTypeName = "listr.debug.hold"
    /// How long to wait, 0-300 s.
    public var seconds: Double
    /// Creates the command.
    public init(seconds: Double) { self.seconds = seconds }
}
