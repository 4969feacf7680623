import Foundation

/// What an app answers to a command: a text message, binary data, or a failure with a message.
///
/// ```swift
/// try receiver.handle(ListItems.self) { _, _ in
///     .text(await store.items.map(\.line).joined(separator: "\n"))
/// }
/// try receiver.handle(DumpStore.self) { _, _ in
///     .data(try await store.encoded())
/// }
/// ```
///
/// A handler that throws answers `failure(_:)` with the error's message, so `throw` and `return .failure(...)` reach
/// the CLI the same way (exit code 1).
public enum CommandResponse: Sendable, Hashable {
    /// A message for the user; the CLI prints it on standard output.
    case text(String)
    /// Bytes, for example a file's contents; any size up to ``CommandReceiver/maximumResponseSize``.
    case data(Data)
    /// The command failed; the message says why. The CLI prints it on standard error and exits with code 1.
    case failure(String)

    /// A failure response carrying `error`'s message (its `LocalizedError.errorDescription` when it has one, else its
    /// description).
    public static func failure(_ error: any Error) -> CommandResponse {
        .failure(message(for: error))
    }

    /// Whether this is a text or data response, not a failure.
    public var isSuccess: Bool {
        if case .failure = self { return false }
        return true
    }

    /// The message a user should read for `error`.
    static func message(for error: any Error) -> String {
        if let localized = error as? any LocalizedError, let description = localized.errorDescription {
            return description
        }
        return String(describing: error)
    }
}
