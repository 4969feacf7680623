import Chirp
import ChirpCommands

/// The exit statuses of `chirp`, one per kind of outcome, documented in `chirp --help` and Docs/CLI.md.
enum ExitStatus: Int32, CaseIterable, Sendable {
    /// It worked.
    case success = 0
    /// Anything not covered below (e.g. the listening socket could not be opened).
    case failure = 1
    /// Nothing was found in time: no (matching) peer, no service, too few messages, nothing at `--connect`.
    case nothingFound = 2
    /// A peer failed us: it disconnected, had no responder, its responder threw, a reply or pong was late.
    case peerFailure = 3
    /// Refused: the peer requires a shared secret and none was given, the shared secret does not match, or the
    /// peer's accept policy did not accept us.
    case refused = 4
    /// Bad input: an invalid argument, option, service type or JSON payload (nothing was sent). `EX_USAGE`.
    case badInput = 64
    /// No DNS-SD daemon (avahi-daemon / mDNSResponder) answers. `EX_UNAVAILABLE`.
    case noDaemon = 69
    /// Interrupted (SIGINT or SIGTERM) while waiting. 128 + SIGINT, as shells report it.
    case interrupted = 130
}

/// An error `chirp` reports on standard error before it exits with ``status``.
struct CLIError: Error, CustomStringConvertible {
    var status: ExitStatus
    var message: String
    /// A second line telling the user what to do about it.
    var hint: String?

    var description: String { message }

    static func badInput(_ message: String, hint: String? = nil) -> CLIError {
        CLIError(status: .badInput, message: message, hint: hint)
    }

    static func nothingFound(_ message: String, hint: String? = nil) -> CLIError {
        CLIError(status: .nothingFound, message: message, hint: hint)
    }

    static func peerFailure(_ message: String, hint: String? = nil) -> CLIError {
        CLIError(status: .peerFailure, message: message, hint: hint)
    }

    /// The peers refused us; `reasons` are the core's, one per peer.
    static func refused(_ typeText: String, reasons: [String]) -> CLIError {
        let secret = reasons.contains { $0.contains("shared secret") }
        return CLIError(
            status: .refused,
            message: "refused by the peers of \(typeText): \(reasons.joined(separator: "; "))",
            hint: secret
                ? "give the peers' shared secret with the CHIRP_SECRET environment variable or --secret-file PATH "
                    + "(not on the command line); see Docs/Security.md"
                : nil)
    }

    /// No DNS-SD daemon answers; `detail` is what the core reported. The words every tool of the package uses
    /// (`DNSSDDaemon`), plus the way around discovery that `chirp` has.
    static func noDaemon(_ detail: String) -> CLIError {
        CLIError(
            status: .noDaemon,
            message: DNSSDDaemon.unavailableMessage(detail),
            hint: DNSSDDaemon.hint + ". To reach a peer without discovery, use --connect HOST:PORT.")
    }
}

extension CLIError {
    /// The CLI's view of a core error.
    init(_ error: ChirpError) {
        switch error.code {
        case .invalidServiceType, .invalidConfiguration, .messageTooLarge, .encodingFailed:
            self.init(status: .badInput, message: error.description)
        case .notRunning, .listenFailed:
            self.init(status: .failure, message: error.description)
        case .connectionFailed:
            self.init(status: .nothingFound, message: error.description)
        case .peerNotConnected, .peerDisconnected, .requestTimedOut, .noResponder, .remoteFailure, .decodingFailed,
            .handlerFailed, .outboundLimitExceeded, .protocolViolation:
            self.init(status: .peerFailure, message: error.description)
        default:
            // A code added in a later version of the library: the peer's or the network's side, most likely.
            self.init(status: .peerFailure, message: error.description)
        }
    }
}
