import Chirp
import Foundation

/// Why a command got no answer, each case with the exit code it maps to and a message a user can act on.
public enum CommandError: Error, Sendable, Equatable, CustomStringConvertible, LocalizedError {
    /// No app of the service connected within the timeout. `peer` is the name asked for with `--peer`; `detail`
    /// adds what was seen instead (other apps, a missing DNS-SD daemon, refused connections).
    case noApp(service: String, peer: String?, seconds: Double, detail: String?)
    /// Several apps answered and none was chosen; each label is "NAME on HOST".
    case severalApps(service: String, apps: [String])
    /// The app was found but the connection dropped (or could not be made) before it replied.
    case connectionLost(app: String)
    /// The app did not reply within the timeout.
    case noReply(app: String, seconds: Double)
    /// Every app found refused this CLI: it requires a shared secret we do not have, the secrets do not match, or
    /// its accept policy said no. Each reason names the app and says what to do.
    case refused(service: String, reasons: [String])
    /// Something failed on this side: the command could not be encoded or sent, or its reply not saved.
    case local(String)

    /// The exit code this error maps to.
    public var exitCode: CommandExitCode {
        switch self {
        case .noApp: return .noApp
        case .severalApps: return .severalApps
        case .connectionLost, .noReply: return .connectionLost
        case .refused: return .refused
        case .local: return .appFailure
        }
    }

    /// The message printed after `TOOL: error: `.
    public var description: String {
        switch self {
        case .noApp(let service, let peer, let seconds, let detail):
            let what = peer.map { "no app named '\($0)'" } ?? "no app"
            var text = "\(what) found on service '\(service)' within \(Self.format(seconds)) s"
            if let detail { text += " (\(detail))" }
            return text + "; is it running, with the same --service?"
        case .severalApps(let service, let apps):
            return "several apps answer on service '\(service)': \(apps.joined(separator: ", ")); "
                + "choose one with --peer NAME, or send to all with --all"
        case .connectionLost(let app):
            return "lost the connection to \(app) before it replied"
        case .noReply(let app, let seconds):
            return "no reply from \(app) within the \(Self.format(seconds)) s timeout"
        case .refused(let service, let reasons):
            return "refused on service '\(service)': " + reasons.joined(separator: "; ")
        case .local(let message):
            return message
        }
    }

    /// The same sentence as ``description``, for `localizedDescription`.
    public var errorDescription: String? { description }

    static func format(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
    }
}
