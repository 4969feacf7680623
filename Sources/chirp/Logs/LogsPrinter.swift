import ChirpLogs
import Foundation

import struct ChirpCommands.SecretOptions

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Turns viewer events into output: records on standard output (text, API lines, full exchanges or NDJSON), notices
/// about sources on standard error (or as JSON objects on standard output with --json).
struct LogsPrinter: Sendable {
    enum Mode: Sendable {
        case text
        case http
        case httpDetail
        case json
    }

    let formatter: LogFormatter
    let filter: LogFilter
    let mode: Mode
    let follow: Bool

    func handle(_ event: LogViewerEvent) {
        switch event {
        case .records(let records, _):
            var out = ""
            for record in records where filter.admits(record) {
                switch mode {
                case .text:
                    out += formatter.line(for: record)
                case .http:
                    out += formatter.httpLine(for: record) ?? ""
                case .httpDetail:
                    out += (formatter.httpDetail(for: record) ?? "") + "\n"
                case .json:
                    out += LogJSON.line(for: record)
                }
                out += "\n"
            }
            LogsOutput.stdout(out)
        case .lost(let loss, let source):
            if mode == .json {
                LogsOutput.stdout(LogJSON.notice("lost", source: source, loss: loss) + "\n")
            } else {
                let range = loss.count == 1 ? "#\(loss.from)" : "#\(loss.from)-#\(loss.through)"
                let text =
                    "\(loss.count) record\(loss.count == 1 ? "" : "s") lost from \(source) (\(range)): \(loss.reason)"
                LogsOutput.stdout(formatter.notice(text, style: .yellow) + "\n")
            }
        case .following(let source, let resumed):
            if mode == .json {
                LogsOutput.stdout(LogJSON.notice("following", source: source) + "\n")
            }
            LogsOutput.stderr("-- following \(source)\(resumed ? " again" : "")")
        case .sourceLost(let source):
            if mode == .json {
                LogsOutput.stdout(LogJSON.notice("source-lost", source: source) + "\n")
            }
            LogsOutput.stderr("-- lost \(source)" + (follow ? "; following it again when it returns" : ""))
        case .historyComplete(let source):
            if mode == .json {
                LogsOutput.stdout(LogJSON.notice("history-complete", source: source) + "\n")
            }
        case .waiting(let text):
            LogsOutput.status(text)
        case .problem(let text):
            LogsOutput.error(text)
        case .discoveryUnavailable:
            break  // the command ends with the no-daemon error (exit 69), or, with --connect, goes on
        case .refused(let refusal):
            if mode == .json {
                LogsOutput.stdout(LogJSON.refusal(refusal) + "\n")
            }
            LogsOutput.error("refused: \(refusal)", hint: Self.hint(for: refusal.kind))
        }
    }

    /// What the user can do about a refusal.
    static func hint(for kind: LogSourceRefusal.Kind) -> String? {
        let variable = SecretOptions.environmentVariable
        switch kind {
        case .secretRequired:
            return "give the app's shared secret with the \(variable) environment variable or --secret-file PATH "
                + "(not on the command line); see Docs/Security.md"
        case .secretMismatch:
            return "check \(variable) or --secret-file: it must hold the same secret as the app"
        case .sourceHasNoSecret:
            return "unset \(variable) and drop --secret-file to follow this app, or give it the same secret"
        case .notAccepted, .other:
            return nil
        }
    }
}

/// Whole-line writes to standard output and standard error.
enum LogsOutput {
    static let stderrIsTerminal = isatty(STDERR_FILENO) == 1

    static func stdout(_ text: String) {
        write(text, to: STDOUT_FILENO)
    }

    static func stderr(_ line: String) {
        write(line + "\n", to: STDERR_FILENO)
    }

    /// A transient status, only when standard error is a terminal.
    static func status(_ line: String) {
        guard stderrIsTerminal else { return }
        write("-- " + line + "\n", to: STDERR_FILENO)
    }

    /// An error in the style of every chirp command: `chirp: error: ...`, then `chirp: hint: ...`.
    static func error(_ message: String, hint: String? = nil) {
        Terminal.error(message, hint: hint)
    }

    private static func write(_ text: String, to fd: Int32) {
        guard !text.isEmpty else { return }
        Terminal.writeAll(Array(text.utf8), to: fd)
    }
}
