import ArgumentParser
import Chirp

/// Runs a command's body the same way for every subcommand: signals become cancellation, errors become a message on
/// standard error and the documented exit status (see ``ExitStatus``).
enum CommandRunner {
    /// Runs `body`, which returns the exit status; exits with it unless it is ``ExitStatus/success``.
    static func run(_ body: @escaping @Sendable () async throws -> ExitStatus) async throws {
        let status: ExitStatus
        do {
            // A command that ends normally after Ctrl-C (browse, listen, ping's summary) reports its own status;
            // one cut off while waiting throws, which is reported as `interrupted` below.
            let (result, _) = try await Interrupts.run(body)
            Terminal.clearStatus()
            status = result
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
