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

/// How the command-line tools of this package write: unbuffered, so that output and errors interleave in order;
/// errors in one style, `TOOL: error: ...` then `TOOL: hint: ...` (Docs/CLI.md); and quietly done when the reader of
/// standard output has gone away (`listrctl item list | head -1`).
///
/// A tool of your own that runs through ``CommandLineTool`` reports the errors it handles itself in the same style
/// with ``error(_:hint:)``:
///
/// ```swift
/// StandardStreams.error("port 7777 is in use", hint: "choose another port: --listen 127.0.0.1:PORT")
/// throw ExitCode(1)
/// ```
///
/// Written by hand rather than with `FileHandle.write`: on Linux that traps on a closed pipe (EPIPE) instead of
/// reporting it, which would crash a tool whose output is piped into `head`.
public enum StandardStreams {
    /// The name the tool was started as (`listrctl`), which starts its error lines.
    package static let programName: String = {
        let path = CommandLine.arguments.first ?? "command"
        return path.split(separator: "/").last.map(String.init) ?? path
    }()

    /// Writes `text` to standard output as it is (the caller escapes what came from a peer).
    package static func output(_ text: String) { writeAll(Array(text.utf8), to: STDOUT_FILENO) }

    /// Writes `data` to standard output as it is.
    package static func output(_ data: Data) { writeAll(Array(data), to: STDOUT_FILENO) }

    /// `TOOL: error: message`, then `TOOL: hint: hint`, on standard error, with control characters escaped (messages
    /// often quote what a peer sent).
    ///
    /// - Parameters:
    ///   - message: What went wrong, in a sentence.
    ///   - hint: What the user can do about it, if anything.
    public static func error(_ message: String, hint: String? = nil) {
        var text = "\(programName): error: \(UntrustedText.escaped(message))\n"
        if let hint { text += "\(programName): hint: \(UntrustedText.escaped(hint))\n" }
        writeAll(Array(text.utf8), to: STDERR_FILENO)
    }

    /// `TOOL: warning: message` on standard error.
    package static func warning(_ message: String) {
        writeAll(Array("\(programName): warning: \(UntrustedText.escaped(message))\n".utf8), to: STDERR_FILENO)
    }

    /// Writes all of `bytes` to `fd`. When standard output's reader has gone away, the process ends at once with
    /// status 0 and says nothing: nobody can read what it would print next. (SIGPIPE is ignored, as NIO sets it up,
    /// so the write fails with EPIPE.) On standard error such a failure is ignored.
    package static func writeAll(_ bytes: [UInt8], to fd: Int32) {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count, let base = buffer.baseAddress {
                let written = systemWrite(fd, base + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    if errno == EPIPE && fd == STDOUT_FILENO { exit(0) }
                    return
                }
                offset += written
            }
        }
    }
}

#if canImport(Glibc)
private let systemWrite = Glibc.write
#elseif canImport(Musl)
private let systemWrite = Musl.write
#elseif canImport(Darwin)
private let systemWrite = Darwin.write
#endif
