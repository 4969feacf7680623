import Chirp

/// A command a command-line tool sends to a running app: a `Codable` struct with a stable wire name.
///
/// Share the command types between the app and its CLI through a small module of their own, and give each a
/// `ChirpMessage.chirpTypeName` that never changes, so that an older CLI and a newer app still understand
/// each other:
///
/// ```swift
/// public struct AddItem: ChirpCommand {
///     public static let chirpTypeName = "listr.item.add"
///     public var title: String
///     public init(title: String) { self.title = title }
/// }
/// ```
///
/// The app answers it through a ``CommandReceiver``; the CLI sends it with a ``CommandTransmitter`` or, from a
/// swift-argument-parser command, with ``ConnectionOptions/run(_:reply:)``.
public protocol ChirpCommand: Codable, Sendable, ChirpMessage {}
