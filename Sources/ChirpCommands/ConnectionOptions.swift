import ArgumentParser
import Chirp
import Logging

/// Names an app's command channel for its CLI: the service type it advertises unless told otherwise.
///
/// ```swift
/// public enum ListrChannel: CommandChannel {
///     public static let defaultServiceType = "listrctl"
/// }
/// ```
/// Put it in the module the app and its CLI share, and use it for the app's `--service` default too.
public protocol CommandChannel: Sendable {
    /// The DNS-SD service type (1-15 letters, digits, hyphens) the app advertises by default.
    static var defaultServiceType: String { get }
}

/// The connection options every subcommand of a CLI shares: `--service`, `--peer`, `--all`, `--timeout`,
/// `--loopback`, `--verbose`, and the shared secret (``SecretOptions``: `CHIRP_SECRET` or `--secret-file PATH`).
///
/// ```swift
/// struct Add: AsyncParsableCommand {
///     @OptionGroup var connection: ConnectionOptions<ListrChannel>
///     @Argument var title: String
///     func run() async throws { try await connection.run(AddItem(title: title)) }
/// }
/// ```
public struct ConnectionOptions<Channel: CommandChannel>: ParsableArguments, Sendable {
    /// `--service TYPE`: the DNS-SD service type the app advertises.
    @Option(help: ArgumentHelp("The DNS-SD service type the app advertises.", valueName: "TYPE"))
    public var service: String = Channel.defaultServiceType

    /// `--peer NAME`: the app to talk to when several run: its name, its full peer id, or the start of its id (at
    /// least 4 characters), which tells apart two apps of the same name.
    @Option(
        help: ArgumentHelp(
            "Talk to the app with this name, or whose id starts with this (4 characters or more), when several run "
                + "(they are listed then, with their ids).", valueName: "NAME|ID"))
    public var peer: String?

    /// `--all`: send to every app found and print each reply labelled with the app's name, id and host.
    @Flag(help: "Send to every app of the service found and print each reply labelled with its name, id and host.")
    public var all = false

    /// `--timeout SECONDS`: the longest the command takes, finding the app and waiting for its reply.
    @Option(help: ArgumentHelp("Seconds to wait in all: to find the app and for its reply.", valueName: "SECONDS"))
    public var timeout: Double = 10

    /// `--loopback`: look for apps on this machine only.
    @Flag(help: "Look for apps on this machine only (the loopback interface).")
    public var loopback = false

    /// `--verbose`: log discovery and connections on standard error.
    @Flag(help: "Log discovery and connection details on standard error.")
    public var verbose = false

    /// `--secret-file PATH` (or `CHIRP_SECRET`): the shared secret, for apps that require one.
    @OptionGroup public var secret: SecretOptions

    /// A fixed settle window, in milliseconds, instead of the adaptive one (see Docs/Commands.md).
    @Option(name: .customLong("settle-ms"), help: .hidden)
    public var settleMilliseconds: Int?

    /// Creates the options with their defaults (swift-argument-parser fills them in).
    public init() {}

    /// Rejects a bad service type, a timeout that is not positive, and `--peer` with `--all`.
    public func validate() throws {
        do {
            _ = try ServiceType(service)
        } catch {
            throw ValidationError("--service: \(error)")
        }
        guard timeout.isFinite, timeout > 0, timeout <= 86_400 else {
            throw ValidationError(
                "--timeout must be greater than 0 and at most 86400 seconds, got \(formatSeconds(timeout))")
        }
        if peer != nil && all { throw ValidationError("--peer and --all cannot be used together") }
        if let peer, peer.isEmpty { throw ValidationError("--peer needs a name or an id") }
        if let settleMilliseconds, settleMilliseconds < 0 { throw ValidationError("--settle-ms cannot be negative") }
    }

    /// With `--verbose`, a logger that writes everything to standard error; otherwise one that discards
    /// everything, so that nothing but the tool's own `TOOL: error:` line reaches the terminal when it fails. It is
    /// made with its own handler, so it works without bootstrapping the logging system.
    public func makeLogger(label: String = "chirp") -> Logger {
        guard verbose else { return Logger(label: label) { _ in SwiftLogNoOpLogHandler() } }
        var logger = Logger(label: label) { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = .debug
        return logger
    }

    /// A transmitter configured from these options, the shared secret included.
    /// - Throws: `ValidationError` when the secret file cannot be read or the secret is too short (see
    ///   ``SecretOptions/security(environment:trust:)``).
    public func makeTransmitter(logger: Logger? = nil) throws -> CommandTransmitter {
        var configuration = Configuration(serviceType: service)
        configuration.interface = loopback ? .loopback : .any
        configuration.logger = logger ?? makeLogger()
        configuration.security = try secret.security()
        return CommandTransmitter(
            configuration: configuration, timeout: .milliseconds(Int64((timeout * 1000).rounded())),
            settleWindow: settleMilliseconds.map { .milliseconds($0) })
    }
}
