import Chirp
import ChirpSupport
import Foundation
import Logging

/// The app side of the command channel: answers the commands a CLI sends, one handler per command type.
///
/// ```swift
/// var configuration = Configuration(serviceType: "listrctl")
/// configuration.peerName = "kitchen"
/// let transceiver = Transceiver(configuration: configuration)
/// let receiver = CommandReceiver(transceiver: transceiver, logger: logger)
/// try receiver.handle(AddItem.self) { command, sender in
///     let item = try await store.add(title: command.title)
///     return .text("added #\(item.id): \(item.title)")
/// }
/// try await transceiver.start()
/// ```
///
/// Each reply goes to the peer that asked, and only to it: two CLIs running at once each get their own answer. A
/// handler that throws answers `CommandResponse.failure(_:)` with the error's message, and the app keeps serving.
/// A reply larger than ``maximumResponseSize`` is replaced by a failure that says so.
///
/// With device identities (`Configuration.security = .identity(...)`), each command says the permission it needs
/// (`handle(ListItems.self, requiring: .read)`), and a CLI whose device lacks it is refused: the handler does not run.
///
/// The receiver logs a warning when it is created if the transceiver accepts connections from other hosts without a
/// shared secret or device identities: anyone who can reach the port could run the commands. Set `Configuration.security` to
/// `.sharedSecret(...)` (CLIs then need the same secret), or `Configuration.interface = .loopback` when only tools on
/// the same machine should drive the app. See Docs/Security.md. An app with a command line says what to do in its own
/// words (its options) with `openAccessRemedy`, or reports it itself (``openAccessWarning(for:remedy:)``) and
/// passes `warnsOfOpenAccess: false`.
///
/// A command that cannot be decoded (a field missing, a value of the wrong type: a CLI older or newer than the app)
/// is answered with a failure that says which field, in words, and no handler runs.
public final class CommandReceiver: Sendable {
    /// The transceiver the commands arrive through.
    public let transceiver: Transceiver
    /// The largest encoded reply sent, in bytes (the reply's payload: one kind byte plus the text or data).
    /// Default: the transceiver's `maximumMessageSize` minus 1 KiB for the frame header.
    public let maximumResponseSize: Int
    private let logger: Logger

    /// Creates a receiver that serves commands through `transceiver`. Register handlers with `handle(_:requiring:with:)`;
    /// they can be added before or after the transceiver is resumed.
    ///
    /// - Parameters:
    ///   - transceiver: the app's transceiver: commands arrive as its requests.
    ///   - logger: where to log commands that fail and the start-up warning; default: the transceiver's logger.
    ///   - maximumResponseSize: see ``maximumResponseSize``; values above the default are lowered to it.
    ///   - openAccessRemedy: what the start-up warning tells the user to do, in the app's words (its options); by
    ///     default it names the `Configuration` settings.
    ///   - warnsOfOpenAccess: `false` when the app reports ``openAccessWarning(for:remedy:)`` itself.
    public init(
        transceiver: Transceiver, logger: Logger? = nil, maximumResponseSize: Int? = nil,
        openAccessRemedy: String? = nil, warnsOfOpenAccess: Bool = true
    ) {
        self.transceiver = transceiver
        self.logger = logger ?? transceiver.configuration.logger
        let limit = max(transceiver.configuration.maximumMessageSize - 1024, 1)
        self.maximumResponseSize = min(maximumResponseSize ?? limit, limit)
        if warnsOfOpenAccess,
            let warning = Self.openAccessWarning(for: transceiver.configuration, remedy: openAccessRemedy)
        {
            self.logger.warning("\(warning)")
        }
    }

    /// What the default warning tells the user to do.
    public static let defaultOpenAccessRemedy = """
        Set a shared secret (Configuration.security; CLIs give it with CHIRP_SECRET or --secret-file), or \
        Configuration.interface = .loopback to accept commands from this machine only.
        """

    /// The start-up warning for `configuration`, ending with `remedy` (by default ``defaultOpenAccessRemedy``), or
    /// `nil` when only this machine can connect or a shared secret is required.
    public static func openAccessWarning(for configuration: Configuration, remedy: String? = nil) -> String? {
        guard configuration.interface != .loopback else { return nil }
        if case .sharedSecret = configuration.security { return nil }
        if case .identity = configuration.security { return nil }
        return """
            accepting commands from any host that can reach this machine (interface: \(configuration.interface)), \
            with no shared secret: anyone on the network can run them. \(remedy ?? defaultOpenAccessRemedy)
            """
    }

    /// Answers commands of type `C` with `handler`, which runs on an event loop: keep it short, or use the `async`
    /// overload. A new handler for the same type replaces the previous one.
    ///
    /// - Parameters:
    ///   - type: the command type.
    ///   - permission: what the sender must hold to run it (device identities: its trust file line's `perms=`; open
    ///     or with a shared secret every sender holds every permission). A sender without it gets a refusal that
    ///     says which permission, and its CLI exits with ``CommandExitCode/notPermitted``; the handler does not run.
    ///     Default: `Permission.write` (a command changes something unless said otherwise: declare
    ///     `.read` for those that only read).
    ///   - handler: gets the command and the peer that sent it; returns the response. A thrown error becomes
    ///     `CommandResponse.failure(_:)` with the error's message.
    /// - Throws: what `Transceiver.respond(to:with:)` throws for the command's type name (it cannot travel, or
    ///   another Swift type holds it).
    public func handle<C: ChirpCommand>(
        _ type: C.Type, requiring permission: Permission = .write,
        with handler: @escaping @Sendable (_ command: C, _ sender: Peer) throws -> CommandResponse
    ) throws {
        try transceiver.respond(to: Incoming<C>.self) { (incoming: Incoming<C>, sender: Peer) throws -> Data in
            if let denied = self.denial(of: C.chirpTypeName, to: sender, requiring: permission) { return denied }
            switch incoming.command {
            case .success(let command):
                return self.reply(Result { try handler(command, sender) }, to: C.chirpTypeName, from: sender)
            case .failure(let failure):
                return self.reply(.failure(failure), to: C.chirpTypeName, from: sender)
            }
        }
    }

    /// Answers commands of type `C` with an `async` handler; commands from different CLIs run concurrently.
    ///
    /// ```swift
    /// try receiver.handle(ListItems.self) { _, _ in .text(await store.listing()) }
    /// ```
    public func handle<C: ChirpCommand>(
        _ type: C.Type, requiring permission: Permission = .write,
        with handler: @escaping @Sendable (_ command: C, _ sender: Peer) async throws -> CommandResponse
    ) throws {
        try transceiver.respond(to: Incoming<C>.self) { (incoming: Incoming<C>, sender: Peer) async throws -> Data in
            if let denied = self.denial(of: C.chirpTypeName, to: sender, requiring: permission) { return denied }
            let result: Result<CommandResponse, any Error>
            switch incoming.command {
            case .success(let command):
                do { result = .success(try await handler(command, sender)) } catch { result = .failure(error) }
            case .failure(let failure):
                result = .failure(failure)
            }
            return self.reply(result, to: C.chirpTypeName, from: sender)
        }
    }

    /// The reply refusing command `typeName` to `sender` when it lacks `permission` (``Transceiver/permissions(of:)``);
    /// nil when it holds it. The refusal is logged.
    func denial(of typeName: String, to sender: Peer, requiring permission: Permission) -> Data? {
        let held = transceiver.permissions(of: sender)
        guard !held.contains(permission) else { return nil }
        let device = sender.fingerprint.map { " (\($0.short))" } ?? ""
        let message =
            "\(typeName) needs the '\(permission.rawValue)' permission, and this device\(device) holds "
            + (held.isEmpty ? "none" : Permission.list(held))
            + ": the app's owner can grant it in the app's trust file (perms=)"
        logger.notice(
            "command refused: the sender lacks a permission",
            metadata: [
                "command": "\(typeName)", "from": "\(UntrustedText.escaped(sender.name))",
                "needs": "\(permission.rawValue)", "holds": "\(Permission.list(held))"
            ])
        return CommandResponse.denied(message)
    }

    /// The encoded reply for a handler's outcome: failures logged, size checked.
    func reply(_ result: Result<CommandResponse, any Error>, to typeName: String, from sender: Peer) -> Data {
        let response: CommandResponse
        switch result {
        case .success(let value):
            response = value
            if case .failure(let message) = value {
                logger.notice(
                    "command failed",
                    metadata: [
                        "command": "\(typeName)", "from": "\(UntrustedText.escaped(sender.name))",
                        "reason": "\(UntrustedText.escaped(message))"
                    ])
            }
        case .failure(let error):
            response = .failure(error)
            logger.notice(
                "command handler threw",
                metadata: [
                    "command": "\(typeName)", "from": "\(UntrustedText.escaped(sender.name))",
                    "error": "\(UntrustedText.escaped("\(error)"))"
                ])
        }
        let encoded = response.encoded()
        guard encoded.count > maximumResponseSize else { return encoded }
        let message =
            "the reply to \(typeName) is \(encoded.count) bytes, over the limit of \(maximumResponseSize) bytes"
        logger.error("\(message)", metadata: ["from": "\(UntrustedText.escaped(sender.name))"])
        return CommandResponse.failure(message).encoded()
    }
}

/// A command as it arrives: decoded, or why it could not be. Registered under the command's own wire name, so that a
/// command with a missing or mistyped field is answered with a failure in words, not the decoder's debug text.
struct Incoming<C: ChirpCommand>: Decodable, Sendable, ChirpMessage {
    static var chirpTypeName: String { C.chirpTypeName }

    var command: Result<C, CommandDecodingFailure>

    init(from decoder: any Decoder) throws {
        do {
            command = .success(try C(from: decoder))
        } catch let error as DecodingError {
            command = .failure(
                CommandDecodingFailure(typeName: C.chirpTypeName, reason: DecodingErrorText.describe(error)))
        }
        // Any other error is the decoder's own business (the core's fast JSON path gives way to Foundation's that
        // way): it goes through.
    }
}

/// A command that could not be decoded: "the listr.item.add command could not be read: missing field 'title'".
struct CommandDecodingFailure: Error, Sendable, CustomStringConvertible {
    var typeName: String
    var reason: String

    var description: String {
        "the \(typeName) command could not be read: \(reason) (are the app and the CLI of matching versions?)"
    }
}
