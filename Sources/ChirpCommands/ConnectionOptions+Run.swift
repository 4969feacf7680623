import ArgumentParser
import Chirp
import ChirpSupport
import Foundation

extension ConnectionOptions {
    /// Sends `command` as these options say (one app, the one named by `--peer`, or `--all`), prints the outcome,
    /// and maps it to the documented exit code (``CommandExitCode``): returns on success, throws `ExitCode` otherwise.
    ///
    /// ```swift
    /// func run() async throws {
    ///     try await connection.run(ListItems())
    /// }
    /// ```
    ///
    /// Successful replies go to `reply`; by default text is printed on standard output (with a final newline) and
    /// data written there as is. With `--all`, each reply is preceded by a `== NAME (ID) on HOST ==` line (ID: the
    /// first 8 characters of the app's peer id, which tell apart two apps of the same name). Failures and errors go to
    /// standard error as `TOOL: error: ...` lines (`listrctl: error: ...`); with `--all` they name the app. While it
    /// looks for the app, a status line on standard error says so when standard error is a terminal.
    ///
    /// - Parameters:
    ///   - command: the command to send.
    ///   - reply: what to do with a successful reply, e.g. save data to a file. An error it throws is printed and
    ///     gives exit code 1.
    public func run<C: ChirpCommand>(
        _ command: C, reply: (@Sendable (CommandReply) throws -> Void)? = nil
    ) async throws {
        let transmitter = try makeTransmitter()
        WaitingNote.show(
            "waiting up to \(formatSeconds(timeout)) s for \(all ? "the apps" : peer.map { "app '\($0)'" } ?? "the app") "
                + "of service '\(service)' (Ctrl-C to stop)...")
        let code = await send(command, with: transmitter, reply: reply ?? Self.printReply)
        if code != .success { throw ExitCode(code.rawValue) }
    }

    /// Sends and prints; returns the exit code.
    func send<C: ChirpCommand>(
        _ command: C, with transmitter: CommandTransmitter, reply: @Sendable (CommandReply) throws -> Void
    ) async -> CommandExitCode {
        if all {
            let outcomes: [CommandOutcome]
            do {
                outcomes = try await transmitter.sendToAll(command)
                WaitingNote.clear()
            } catch {
                Self.report(error)
                return error.exitCode
            }
            var worst = CommandExitCode.success
            for outcome in outcomes {
                var code = outcome.exitCode
                let label = outcome.app.identifiedLabel
                switch outcome.result {
                case .success(.failure(let message)):
                    StandardStreams.error("\(label): \(message)")  // escaped by error()
                case .success(let response):
                    StandardStreams.output("== \(UntrustedText.escaped(label)) ==\n")  // names from the network
                    code = Self.deliver(CommandReply(app: outcome.app, response: response), to: reply, label: label)
                case .failure(let error):
                    StandardStreams.error("\(error)")
                }
                if code.rawValue > worst.rawValue { worst = code }
            }
            return worst
        }
        let answer: CommandReply
        do {
            answer = try await transmitter.send(command, to: peer)
            WaitingNote.clear()
        } catch {
            Self.report(error)
            return error.exitCode
        }
        if case .failure(let message) = answer.response {
            StandardStreams.error("\(message)")
            return .appFailure
        }
        return Self.deliver(answer, to: reply, label: nil)
    }

    /// `TOOL: error: MESSAGE`, with a hint when there is something to do about it.
    private static func report(_ error: CommandError) {
        WaitingNote.clear()
        StandardStreams.error(error.message, hint: error.code == .noDaemon ? DNSSDDaemon.hint : nil)
    }

    private static func deliver(_ answer: CommandReply, to reply: (CommandReply) throws -> Void, label: String?)
        -> CommandExitCode
    {
        do {
            try reply(answer)
            return .success
        } catch {
            StandardStreams.error((label.map { "\($0): " } ?? "") + CommandResponse.message(for: error))
            return .appFailure
        }
    }

    /// The default reply handler: text on standard output with a final newline, data as is to a file or a pipe. The
    /// app's text is shown with its control characters escaped (line breaks kept), and data is not written to a
    /// terminal (its size is, with a hint), so a reply cannot drive the terminal.
    @Sendable public static func printReply(_ reply: CommandReply) {
        switch reply.response {
        case .text(let text):
            let shown = UntrustedText.escaped(text, keepingNewlines: true)
            StandardStreams.output(shown.isEmpty || shown.hasSuffix("\n") ? shown : shown + "\n")
        case .data(let data) where isatty(STDOUT_FILENO) == 1:
            StandardStreams.output("<\(data.count) bytes of data; redirect standard output to a file to save them>\n")
        case .data(let data):
            StandardStreams.output(data)
        case .failure(let message):
            StandardStreams.error(message)
        }
    }
}
