import Chirp
import ChirpSupport
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The status line a tool shows on standard error while it waits ("waiting up to 10 s for the app of service
/// 'listrctl' (Ctrl-C to stop)..."), only when standard error is a terminal, so that piped and captured output
/// stay clean; `chirp` shows the same. It is erased before the tool prints anything else.
package enum WaitingNote {
    private static let lock = NSLock()
    /// Whether a note is on screen; guarded by `lock`.
    nonisolated(unsafe) private static var shown = false
    private static let stderrIsTerminal = isatty(STDERR_FILENO) == 1

    /// Shows `text` as the status line (control characters escaped), when standard error is a terminal.
    package static func show(_ text: String) {
        guard stderrIsTerminal else { return }
        lock.withLock {
            StandardStreams.writeAll(Array("\r\u{1B}[K\(UntrustedText.escaped(text))".utf8), to: STDERR_FILENO)
            shown = true
        }
    }

    /// Erases the status line, if one is shown.
    package static func clear() {
        guard stderrIsTerminal else { return }
        lock.withLock {
            guard shown else { return }
            StandardStreams.writeAll(Array("\r\u{1B}[K".utf8), to: STDERR_FILENO)
            shown = false
        }
    }
}
