import Chirp
import ChirpCommands
import ChirpSupport
import Foundation
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where `chirp` writes: results to standard output, one whole line per write; errors and transient status to
/// standard error. Status lines appear only when standard error is a terminal, so piped output stays clean.
///
/// Lines hold what other peers chose (names, type names, reasons, metadata): every line, note, warning and error is
/// written with its control characters escaped (``UntrustedText``), so a peer can neither forge an output line nor
/// drive the terminal. Only ``raw(_:)-(String)`` writes text as it is: its callers escape what comes from a peer.
enum Terminal {
    /// The output lock, and whether a status line is on screen: every write to standard output or standard error
    /// goes under it, so lines from different threads never interleave.
    private static let statusShown = NIOLockedValueBox(false)

    /// Whether standard output is a terminal (live tables redraw only then).
    static let stdoutIsTTY = isatty(STDOUT_FILENO) == 1
    /// Whether standard error is a terminal (status lines appear only then).
    static let stderrIsTTY = isatty(STDERR_FILENO) == 1

    /// Writes `text` and a newline to standard output at once (after removing the status line, if any).
    static func line(_ text: String) {
        clearStatus()
        write(UntrustedText.escaped(text) + "\n", to: STDOUT_FILENO)
    }

    /// Writes `text` to standard output as is.
    static func raw(_ text: String) {
        clearStatus()
        write(text, to: STDOUT_FILENO)
    }

    /// Writes bytes to standard output as is.
    static func raw(_ data: Data) {
        writeBytes(Array(data), to: STDOUT_FILENO)
    }

    /// Shows `text` as the status line on standard error (replacing the previous one) when it is a terminal.
    static func status(_ text: String) {
        guard stderrIsTTY else { return }
        write("\r\u{1B}[K\(UntrustedText.escaped(text))", to: STDERR_FILENO, status: true)
    }

    /// A line of information on standard error, only when it is a terminal.
    static func note(_ text: String) {
        guard stderrIsTTY else { return }
        write("\r\u{1B}[K\(UntrustedText.escaped(text))\n", to: STDERR_FILENO, status: false)
    }

    /// A line on standard error, always (progress when it is not a terminal).
    static func plainError(_ text: String) {
        clearStatus()
        write(UntrustedText.escaped(text) + "\n", to: STDERR_FILENO, status: false)
    }

    /// Removes the status line, if one is shown.
    static func clearStatus() {
        guard stderrIsTTY else { return }
        write("\r\u{1B}[K", to: STDERR_FILENO, status: false, onlyIfShown: true)
    }

    /// Reports a warning on standard error, always.
    static func warning(_ message: String) {
        clearStatus()
        write("chirp: warning: \(UntrustedText.escaped(message))\n", to: STDERR_FILENO, status: false)
    }

    /// Reports an error on standard error, always.
    static func error(_ message: String, hint: String? = nil) {
        clearStatus()
        var text = "chirp: error: \(UntrustedText.escaped(message))\n"
        if let hint { text += "chirp: hint: \(UntrustedText.escaped(hint))\n" }
        write(text, to: STDERR_FILENO, status: false)
    }

    /// Writes `text`; `status` says whether a status line is on screen afterwards (`nil`: unchanged), and
    /// `onlyIfShown` skips the write when no status line is shown.
    private static func write(_ text: String, to fd: Int32, status: Bool? = nil, onlyIfShown: Bool = false) {
        statusShown.withLockedValue { shown in
            if onlyIfShown && !shown { return }
            if let status { shown = status }
            unlockedWrite(Array(text.utf8), to: fd)
        }
    }

    private static func writeBytes(_ bytes: [UInt8], to fd: Int32) {
        statusShown.withLockedValue { _ in unlockedWrite(bytes, to: fd) }
    }

    /// Writes all of `bytes` to `fd` (under the output lock), for writers outside this type.
    static func writeAll(_ bytes: [UInt8], to fd: Int32) {
        writeBytes(bytes, to: fd)
    }

    /// Writes all of `bytes` (see ``StandardStreams/writeAll(_:to:)``: a closed standard output ends the process
    /// quietly, with status 0).
    private static func unlockedWrite(_ bytes: [UInt8], to fd: Int32) {
        StandardStreams.writeAll(bytes, to: fd)
    }
}
