import Chirp

// A command that may run twice declares it with Chirp's marker, which command modules see through this one import.
@_exported import protocol Chirp.IdempotentRequest

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
/// A command is sent as a request. When the connection drops before the reply, it is sent again, once, on the app's
/// next connection if the app cannot have run it (it was never sent); a command that may run twice without harm (one
/// that only reads, such as a listing) says so by conforming to `IdempotentRequest` too, and is sent again even when
/// the app may have run it:
///
/// ```swift
/// public struct ListItems: ChirpCommand, IdempotentRequest {
///     public static let chirpTypeName = "listr.item.list"
///     public init() {}
/// }
/// ```
///
/// The app answers it through a ``CommandReceiver``; the CLI sends it with a ``CommandTransmitter`` or, from a
/// swift-argument-parser command, with ``ConnectionOptions/run(_:reply:)``.
public protocol ChirpCommand: Codable, Sendable, ChirpMessage {}
