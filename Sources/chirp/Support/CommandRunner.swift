import ArgumentParser
import Chirp

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs a command's body the same way for every subcommand: signals become cancellation, errors become a message on
/// standard error and the documented exit status (see ``ExitStatus``).
enum CommandRunner {
    /// Runs `body`, which returns the exit status; exits with it unless it is ``ExitStatus/success``.
    ///
    /// A command that streams its results (`watchesOutput`: browse, listen, ping, logs) also ends, at once, quietly
    /// and with status 0, when the reader of its standard output goes away (`chirp listen chat | head -1`), even
    /// while it has nothing to print. One that does not (send) must not: `chirp send ... | true` still sends.
    static func run(watchesOutput: Bool = false, _ body: @escaping @Sendable () async throws -> ExitStatus) async throws
    {
        // A write to a pipe nobody reads fails with EPIPE (then the process ends quietly, see `StandardStreams`)
        // instead of killing it with SIGPIPE (status 141). NIO ignores SIGPIPE too, but browse starts no NIO.
        signal(SIGPIPE, SIG_IGN)
        let status: ExitStatus
        do {
            // A command that ends normally after Ctrl-C (browse, listen, ping's summary) reports its own status;
            // one cut off while waiting throws, which is reported as `interrupted` below.
            switch try await Interrupts.run(watchingOutput: watchesOutput, body) {
            case .finished(let result, _):
                Terminal.clearStatus()
                status = result
            case .outputClosed:
                Terminal.clearStatus()
                status = .success
            }
        } catch let error as CLIError {
            if error.status != .interrupted {
                Terminal.error(error.message, hint: error.hint)
            } else {
                Terminal.clearStatus()
            }
            status = error.status
        } catch let error as ChirpError {
            let mapped = CLIError(error)
            Terminal.error(mapped.message, hint: mapped.hint)
            status = mapped.status
        } catch is CancellationError {
            Terminal.clearStatus()
            status = .interrupted
        } catch {
            Terminal.error("\(error)")
            status = .failure
        }
        if status != .success { throw ExitCode(status.rawValue) }
    }
}
