/// The exit codes of a command-line tool built with ``ConnectionOptions/run(_:reply:)``.
///
/// Usage errors (an unknown option, a missing argument, a `validate()` that throws) keep swift-argument-parser's own
/// code, 64 (`EX_USAGE`).
public enum CommandExitCode: Int32, Sendable, CaseIterable, CustomStringConvertible {
    /// The command succeeded (with `--all`: on every app).
    case success = 0
    /// The app reported a failure (or its reply could not be saved here).
    case appFailure = 1
    /// No app of the service was found within the timeout.
    case noApp = 3
    /// Several apps were found and none was chosen with `--peer`, or `--peer` matches several of them (two apps of
    /// the same name: choose one by its id).
    case severalApps = 4
    /// The connection was lost, or no reply came within the timeout.
    case connectionLost = 5
    /// The app refused the connection: it requires a shared secret and none was given, the shared secret does not
    /// match, or the app's accept policy did not accept this CLI.
    case refused = 6
    /// The app refused the command: this device (its device identity) lacks the permission the command needs. The
    /// app's owner grants it in the app's trust file (`perms=`).
    case notPermitted = 7
    /// No DNS-SD daemon (avahi-daemon, mDNSResponder) answers: apps can be neither found nor advertised.
    /// `EX_UNAVAILABLE`, as `chirp` reports it.
    case noDaemon = 69

    /// swift-argument-parser's code for usage errors, kept as is.
    public static let usage: Int32 = 64

    /// What the code means, as the help text says it.
    public var description: String {
        switch self {
        case .success: return "success"
        case .appFailure: return "the app reported a failure (or its reply could not be saved)"
        case .noApp: return "no app found within the timeout"
        case .severalApps: return "several apps found and none chosen, or --peer matches several"
        case .connectionLost: return "connection lost, or no reply within the timeout"
        case .refused: return "refused: missing or wrong shared secret, or not accepted by the app"
        case .notPermitted: return "not permitted: this device lacks the permission the command needs"
        case .noDaemon: return "no DNS-SD daemon answers (start avahi-daemon)"
        }
    }

    /// The exit codes as a help section, for a command's `discussion`:
    ///
    /// ```swift
    /// static let configuration = CommandConfiguration(discussion: CommandExitCode.helpText)
    /// ```
    public static var helpText: String {
        var lines = ["EXIT CODES"]
        for code in allCases where code.rawValue < usage { lines.append("  \(code.rawValue)   \(code)") }
        lines.append("  \(usage)  usage error (bad arguments or input file), from swift-argument-parser")
        for code in allCases where code.rawValue > usage { lines.append("  \(code.rawValue)  \(code)") }
        lines.append("  With --all, the highest code among the apps.")
        return lines.joined(separator: "\n")
    }
}
