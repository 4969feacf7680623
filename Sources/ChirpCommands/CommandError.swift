import Chirp
import ChirpSupport
import Foundation

/// Why a command got no answer: what went wrong (``code``), the exit code it maps to (``exitCode``), a sentence a
/// user can act on (``message``), what it is about (the ``service``, the app, the apps or refusal reasons seen), and
/// the underlying ``cause`` when another error led to it.
///
/// It is a struct with an extensible ``Code``, in the style of grpc-swift's `RPCError` (and of Chirp's `ChirpError`),
/// so that a new kind of error does not break a `switch` in your code: match on `code` and keep a `default`.
///
/// ```swift
/// do {
///     let reply = try await transmitter.send(AddItem(title: "milk"), to: "kitchen")
///     print(reply.label)
/// } catch where error.code == .severalApps {
///     print("choose one of \(error.apps.joined(separator: ", "))")
/// } catch {
///     print("\(error.message) (exit code \(error.exitCode.rawValue))")
/// }
/// ```
///
/// (``CommandTransmitter``'s functions throw `CommandError` alone, so `error` in their `catch` is one; elsewhere,
/// match with `catch let error as CommandError where error.code == .noApp`.)
///
/// `description`, `message` and `localizedDescription` give the same sentence, the one a tool prints after
/// `TOOL: error: `.
public struct CommandError: Error, Sendable, Equatable, CustomStringConvertible, LocalizedError {
    /// What went wrong. New codes may come in later versions: a `switch` over them needs a `default`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Wrapped: String, Hashable, Sendable {
            case noApp, severalApps, connectionLost, noReply, refused, local, noDaemon, notPermitted
        }
        private let wrapped: Wrapped
        private init(_ wrapped: Wrapped) { self.wrapped = wrapped }

        /// The code's name, as in `noApp`.
        public var description: String { wrapped.rawValue }

        /// No app of the service connected within the timeout (exit code ``CommandExitCode/noApp``).
        public static let noApp = Code(.noApp)
        /// Several apps answered and none was chosen, or the app asked for (``CommandError/peerName``) names
        /// several of them; ``CommandError/apps`` lists them (exit code ``CommandExitCode/severalApps``).
        public static let severalApps = Code(.severalApps)
        /// The app was found but the connection dropped (or could not be made) before it replied (exit code
        /// ``CommandExitCode/connectionLost``).
        public static let connectionLost = Code(.connectionLost)
        /// The app did not reply within the timeout (exit code ``CommandExitCode/connectionLost``).
        public static let noReply = Code(.noReply)
        /// The apps found refused this CLI; ``CommandError/reasons`` says why (exit code
        /// ``CommandExitCode/refused``).
        public static let refused = Code(.refused)
        /// Something failed on this side: the command could not be encoded or sent, or its reply not saved (exit
        /// code ``CommandExitCode/appFailure``).
        public static let local = Code(.local)
        /// No DNS-SD daemon answers, so no app can be found; ``CommandError/detail`` is what the system reported
        /// (exit code ``CommandExitCode/noDaemon``).
        public static let noDaemon = Code(.noDaemon)
        /// The app refused the command: this device lacks the permission it needs (device identities; exit code
        /// ``CommandExitCode/notPermitted``).
        public static let notPermitted = Code(.notPermitted)

        /// The exit code of an error with this code.
        var exitCode: CommandExitCode {
            switch wrapped {
            case .noApp: return .noApp
            case .severalApps: return .severalApps
            case .connectionLost, .noReply: return .connectionLost
            case .refused: return .refused
            case .local: return .appFailure
            case .noDaemon: return .noDaemon
            case .notPermitted: return .notPermitted
            }
        }
    }

    /// What went wrong.
    public let code: Code
    /// The error as one sentence a user can act on (the same as ``description``), printed after `TOOL: error: `.
    public let message: String
    /// The service type the apps were looked for on, when it matters (``Code/noApp``, ``Code/severalApps``,
    /// ``Code/refused``).
    public let service: String?
    /// The app concerned, when it is known (the connection to it was lost, it did not reply, it refused).
    public let peer: Peer?
    /// The app name asked for (`--peer NAME`), for ``Code/noApp``; `nil` when any app would do.
    public let peerName: String?
    /// The app concerned as "NAME on HOST", for ``Code/connectionLost`` and ``Code/noReply``.
    public let app: String?
    /// The apps that answered, each as "NAME (ID) on HOST" (ID: the first 8 characters of its peer id), for
    /// ``Code/severalApps``; empty otherwise.
    public let apps: [String]
    /// Why the apps refused this CLI, each reason naming the app and saying what to do, for ``Code/refused``; empty
    /// otherwise.
    public let reasons: [String]
    /// The timeout in seconds, for ``Code/noApp`` and ``Code/noReply``.
    public let seconds: Double?
    /// What was seen instead, for ``Code/noApp``: other apps, refused connections; for ``Code/noDaemon``, what the
    /// system reported; for ``Code/connectionLost``, what became of the command (whether the app may have run it).
    public let detail: String?
    /// The underlying error, when another error led to this one (a `ChirpError`, an encoding error).
    public let cause: (any Error)?

    /// Makes an error; ChirpCommands' own are made by the static functions below, one per ``Code``.
    public init(
        code: Code, message: String, service: String? = nil, peer: Peer? = nil, peerName: String? = nil,
        app: String? = nil, apps: [String] = [], reasons: [String] = [], seconds: Double? = nil,
        detail: String? = nil, cause: (any Error)? = nil
    ) {
        self.code = code
        self.message = message
        self.service = service
        self.peer = peer
        self.peerName = peerName
        self.app = app
        self.apps = apps
        self.reasons = reasons
        self.seconds = seconds
        self.detail = detail
        self.cause = cause
    }

    /// The exit code this error maps to.
    public var exitCode: CommandExitCode { code.exitCode }

    /// The same sentence as ``message``: the message printed after `TOOL: error: `.
    public var description: String { message }

    /// The same sentence as ``message``, so that `localizedDescription` reads as the tool's message rather than
    /// "The operation could not be completed".
    public var errorDescription: String? { message }

    /// Equal when everything but the cause is; the cause is not compared.
    public static func == (lhs: CommandError, rhs: CommandError) -> Bool {
        lhs.code == rhs.code && lhs.message == rhs.message && lhs.service == rhs.service && lhs.peer == rhs.peer
            && lhs.peerName == rhs.peerName && lhs.app == rhs.app && lhs.apps == rhs.apps
            && lhs.reasons == rhs.reasons && lhs.seconds == rhs.seconds && lhs.detail == rhs.detail
    }
}

/// A number of seconds as a tool prints it, or as a user typed it: `5` rather than `5.0`; `0.5`, `1e+19` and `nan` as
/// they are (no integer conversion for what an `Int64` cannot hold).
package func formatSeconds(_ value: Double) -> String {
    value.isFinite && value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
}

// MARK: - ChirpCommands' errors, one function per code

extension CommandError {
    /// No app of `service` connected within `seconds`. `peer` is the name asked for with `--peer`; `detail` adds what
    /// was seen instead (other apps, a missing DNS-SD daemon, refused connections).
    public static func noApp(service: String, peer: String?, seconds: Double, detail: String?) -> CommandError {
        let what = peer.map { "no app named '\($0)'" } ?? "no app"
        var text = "\(what) found on service '\(service)' within \(formatSeconds(seconds)) s"
        if let detail { text += " (\(detail))" }
        return CommandError(
            code: .noApp, message: text + "; is it running, with the same --service?", service: service,
            peerName: peer, seconds: seconds, detail: detail)
    }

    /// Several apps answered on `service` and none was chosen; each label is "NAME (ID) on HOST".
    public static func severalApps(service: String, apps: [String]) -> CommandError {
        CommandError(
            code: .severalApps,
            message: "several apps answer on service '\(service)': \(apps.joined(separator: ", ")); "
                + "choose one with --peer NAME (or the start of its ID, when names repeat), or send to all with --all",
            service: service, apps: apps)
    }

    /// `--peer peer` matches several apps of `service` (two apps of one name); each label is "NAME (ID) on HOST".
    public static func ambiguousPeer(service: String, peer: String, apps: [String]) -> CommandError {
        CommandError(
            code: .severalApps,
            message: "--peer '\(peer)' matches \(apps.count) apps on service '\(service)': "
                + "\(apps.joined(separator: ", ")); choose one with --peer ID (at least its first 4 characters), "
                + "or send to all with --all",
            service: service, peerName: peer, apps: apps)
    }

    /// No DNS-SD daemon answers; `detail` is what the system reported (`avahi_client_new failed: ...`). The message
    /// is the one every tool of this package prints (`DNSSDDaemon.unavailableMessage(_:)`, package-internal).
    public static func noDaemon(detail: String) -> CommandError {
        CommandError(code: .noDaemon, message: DNSSDDaemon.unavailableMessage(detail), detail: detail)
    }

    /// `app` ("NAME on HOST"; `peer` when it is known) was found but the connection dropped, or could not be made,
    /// before it replied. `detail` says what became of the command, when it was sent: whether it was sent again on
    /// the app's next connection, and whether the app may have run it (the `reason` of the request's `ChirpError`).
    public static func connectionLost(app: String, peer: Peer? = nil, detail: String? = nil) -> CommandError {
        CommandError(
            code: .connectionLost,
            message: "lost the connection to \(app) before it replied" + (detail.map { ": \($0)" } ?? ""), peer: peer,
            app: app, detail: detail)
    }

    /// `app` ("NAME on HOST"; `peer` when it is known) did not reply within `seconds`.
    public static func noReply(app: String, seconds: Double, peer: Peer? = nil) -> CommandError {
        CommandError(
            code: .noReply, message: "no reply from \(app) within the \(formatSeconds(seconds)) s timeout", peer: peer,
            app: app, seconds: seconds)
    }

    /// Every app found on `service` refused this CLI: it requires a shared secret we do not have, the secrets do not
    /// match, or its accept policy said no. Each reason names the app and says what to do; `peer` is the app when
    /// the error is about one.
    public static func refused(service: String, reasons: [String], peer: Peer? = nil) -> CommandError {
        CommandError(
            code: .refused, message: "refused on service '\(service)': " + reasons.joined(separator: "; "),
            service: service, peer: peer, reasons: reasons)
    }

    /// `app` ("NAME on HOST"; `peer` when it is known) refused the command because this device lacks a permission;
    /// `reason` is the app's sentence (which permission the command needs, which this device holds).
    public static func notPermitted(app: String, reason: String, peer: Peer? = nil) -> CommandError {
        CommandError(
            code: .notPermitted, message: "\(app) refused the command: \(UntrustedText.escaped(reason))", peer: peer,
            app: app, detail: reason)
    }

    /// Something failed on this side, as `message` says: the command could not be encoded or sent, or its reply not
    /// saved. `cause` is the underlying error.
    public static func local(_ message: String, cause: (any Error)? = nil) -> CommandError {
        CommandError(code: .local, message: message, cause: cause)
    }
}
