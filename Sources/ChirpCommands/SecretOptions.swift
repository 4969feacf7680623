import ArgumentParser
import Chirp
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// How a command-line tool protects its connections: a shared secret (the `CHIRP_SECRET` environment variable, or
/// `--secret-file PATH`), or a device identity (`--identity NAME` or `CHIRP_IDENTITY`).
/// Never from the command line: a `--secret VALUE` (or `--secret=VALUE`) is refused with a message that says why
/// (other users see the command line in `ps`, and it stays in the shell history). The secret never appears in logs,
/// errors or `--help`.
///
/// ```swift
/// struct Serve: AsyncParsableCommand {
///     @OptionGroup(title: "Security") var secret: SecretOptions
///     func run() async throws {
///         var configuration = Configuration(serviceType: "myapp")
///         configuration.security = try secret.security()
///     }
/// }
/// ```
///
/// `--secret-file` wins over `CHIRP_SECRET` when both are given. With neither, `security(environment:)` returns
/// `Configuration.Security.none`: connections are open (and peers that require a secret are not dialed).
///
/// With `--identity NAME` the tool uses the device identity `NAME` (made on first use, in
/// `$XDG_CONFIG_HOME/chirp/identity/NAME`) and trusts apps as SSH trusts hosts: the first identity seen under an app's
/// name is pinned in that directory's `known-peers`, and a different one later is refused. The app must trust the
/// tool's fingerprint (`chirp id NAME` prints it; `chirp trust add` on the app's side). A secret and an identity
/// together are refused.
/// ``ConnectionOptions`` includes these options, so every CLI built on it takes them.
public struct SecretOptions: ParsableArguments, Sendable {
    /// `--secret-file PATH`: the file holding the shared secret (its whole content, without surrounding whitespace).
    @Option(
        name: .customLong("secret-file"),
        help: ArgumentHelp(
            "Read the shared secret from this file (or set the CHIRP_SECRET environment variable).",
            discussion: """
                Peers that share a secret authenticate each other and encrypt everything (see Docs/Security.md). \
                The file should be readable by you only (chmod 600). There is no option that takes the secret \
                itself: the command line is visible to every user of the machine.
                """,
            valueName: "PATH"))
    public var secretFile: String?

    /// `--identity NAME`: the device identity to connect with (or the `CHIRP_IDENTITY` environment variable).
    @Option(
        name: .customLong("identity"),
        help: ArgumentHelp(
            "Connect with the device identity NAME, or the one in directory PATH (or set CHIRP_IDENTITY); made on first use.",
            discussion: """
                Apps that use device identities accept only the devices they trust (see Docs/Security.md): \
                `chirp id NAME` prints this identity's fingerprint for the app's owner to trust. The first identity \
                seen under each app's name is pinned; a different one later is refused.
                """,
            valueName: "NAME|PATH"))
    public var identity: String?

    /// The environment variable read when `--identity` is not given: `CHIRP_IDENTITY`.
    public static let identityVariable = "CHIRP_IDENTITY"

    /// The identity a command uses: `given` (its `--identity` or argument), else a non-empty ``identityVariable``, else
    /// `nil`. Every command that takes an identity reads it this way: `chirp id`, `chirp trust`,
    /// ``security(environment:trust:)``.
    package static func identityName(
        _ given: String?, environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> String? {
        given ?? environment[identityVariable].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// `--secret VALUE`: accepted by the parser only to be refused with an explanation. Hidden from `--help`.
    @Option(name: .customLong("secret"), help: .hidden)
    var commandLineSecret: String?

    /// The environment variable read when `--secret-file` is not given: `CHIRP_SECRET`.
    public static let environmentVariable = SharedSecret.environmentVariable

    /// Why a secret on the command line is refused (what `--secret VALUE` prints).
    public static let commandLineRefusal = """
        --secret is not accepted: a secret given on the command line can be read by every user of this machine \
        (it shows in the process list, `ps`) and stays in your shell history. Put the secret in a file only you can \
        read and pass --secret-file PATH, or set the \(SharedSecret.environmentVariable) environment variable.
        """

    /// Creates the options with their defaults (swift-argument-parser fills them in).
    public init() {}

    /// Refuses `--secret`, and checks that the secret in `--secret-file` or `CHIRP_SECRET` can be used (so a bad one
    /// is a usage error before anything starts). Warns on standard error when the secret file can be read by other
    /// users.
    public func validate() throws {
        if commandLineSecret != nil { throw ValidationError(Self.commandLineRefusal) }
        _ = try security()
        if let secretFile, let warning = Self.permissionWarning(for: secretFile) {
            FileHandle.standardError.write(Data("warning: \(warning)\n".utf8))
        }
    }

    /// The security the configuration should use: a shared secret from `--secret-file` or `CHIRP_SECRET`, or
    /// `Configuration.Security.none` when neither is given.
    ///
    /// - Parameters:
    ///   - environment: where `CHIRP_SECRET` and `CHIRP_IDENTITY` are looked up; default: this process's environment.
    ///   - trust: whom a device identity trusts; default: trust on first use.
    /// - Throws: `ValidationError` naming the source (never the secret) when the file cannot be read, the secret is
    ///   too short, the identity cannot be made or read, or both a secret and an identity are given.
    ///
    /// With `--identity NAME` (or `CHIRP_IDENTITY`): the device identity `NAME`, made on first use, trusting peers as
    /// `trust` says: by default as SSH trusts hosts (`PeerTrust.trustOnFirstUse()`), which
    /// suits a CLI; an app that serves commands passes `PeerTrust.trustedPeers()`.
    public func security(
        environment: [String: String] = ProcessInfo.processInfo.environment,
        trust: PeerTrust = .trustOnFirstUse()
    ) throws -> Configuration.Security {
        if commandLineSecret != nil { throw ValidationError(Self.commandLineRefusal) }
        if let identityName = Self.identityName(identity, environment: environment) {
            if secretFile != nil || !(environment[Self.environmentVariable] ?? "").isEmpty {
                throw ValidationError(
                    "a shared secret and a device identity were both given: an app uses one or the other; drop "
                        + "--secret-file and \(Self.environmentVariable), or --identity and \(Self.identityVariable)")
            }
            do {
                let loaded = try Self.identity(named: identityName)
                return .identity(loaded, trust: trust)
            } catch let error as ChirpError {
                throw ValidationError("--identity: \(Self.message(error))")
            }
        }
        do {
            if let secretFile {
                return .sharedSecret(try SharedSecret(contentsOfFile: secretFile))
            }
            if let value = environment[Self.environmentVariable], !value.isEmpty {
                do {
                    return .sharedSecret(try SharedSecret(value))
                } catch let error as ChirpError {
                    throw ValidationError("\(Self.environmentVariable): \(Self.message(error))")
                }
            }
            return .none
        } catch let error as ChirpError {
            throw ValidationError("--secret-file: \(Self.message(error))")
        }
    }

    /// The identity `nameOrPath` names: a name (`laptop`: in the default directory) or, when it holds a `/`, the
    /// identity's directory (`./keys/laptop`: named after its last component), made on first use either way.
    public static func identity(named nameOrPath: String) throws -> DeviceIdentity {
        guard nameOrPath.contains("/") else { return try DeviceIdentity.loadOrCreate(name: nameOrPath) }
        let name = nameOrPath.split(separator: "/").last.map(String.init) ?? nameOrPath
        return try DeviceIdentity.loadOrCreate(name: name, directory: nameOrPath)
    }

    /// Where the secret comes from, for logs: `--secret-file PATH`, `CHIRP_SECRET`, or `nil` (none). Never the secret.
    public func source(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        if let identity { return "--identity \(identity)" }
        if let value = environment[Self.identityVariable], !value.isEmpty { return Self.identityVariable }
        if let secretFile { return "--secret-file \(secretFile)" }
        if let value = environment[Self.environmentVariable], !value.isEmpty { return Self.environmentVariable }
        return nil
    }

    /// The core's message without its "invalid configuration: " prefix; it never contains the secret.
    private static func message(_ error: ChirpError) -> String {
        if error.code == .invalidConfiguration, let problem = error.reason { return problem }
        return error.description
    }

    /// A warning when `path` can be read or written by users other than its owner.
    static func permissionWarning(for path: String) -> String? {
        var status = stat()
        guard stat(path, &status) == 0, status.st_mode & 0o077 != 0 else { return nil }
        return
            "the secret file \(path) can be read by other users of this machine; restrict it with `chmod 600 \(path)`"
    }
}
