import Foundation
import Testing

/// listrctl (and the listr app it drives) as a user meets them on the command line: a missing DNS-SD daemon, a
/// mistyped subcommand, a negative id, the note while it waits on a terminal. (Tests/ChirpCommandsTests drive
/// listr end to end.)
extension ChirpCLITests {
    @Suite(.timeLimit(.minutes(3))) struct Listrctl {
        func listrctl(_ arguments: [String], environment: [String: String?] = [:]) async throws -> TestProcess {
            let process = try await TestProcess(
                binaryPath("listrctl"), arguments, environment: ["COLUMNS": "100"].merging(environment) { $1 },
                input: .closed)
            _ = try await process.waitForExit(timeout: .seconds(60))
            return process
        }

        @Test(arguments: [["item", "list"], ["item", "list", "--all"], ["item", "add", "milk", "--peer", "kitchen"]])
        func noDaemonIs69AtOnce(arguments: [String]) async throws {
            let started = ContinuousClock.now
            let process = try await listrctl(
                arguments + ["--service", uniqueServiceType(), "--timeout", "30"], environment: ExitStatuses.noDaemon)
            #expect(process.exitStatus == 69, "\(process.transcript)")
            #expect(
                process.standardError.hasPrefix("listrctl: error: no DNS-SD daemon answers"), "\(process.transcript)")
            #expect(process.standardError.contains("listrctl: hint: start it with"), "\(process.transcript)")
            // At once, not at its 30 s timeout (the bound is generous for a loaded machine).
            #expect(ContinuousClock.now - started < .seconds(20))
        }

        @Test func listrWithoutADaemonIs69AndItsWarningNamesItsOwnOptions() async throws {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                "listr-\(uniqueServiceType())")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            // Without --loopback (the test daemon is confined to lo either way), so that it warns of the open channel.
            let listr = try await TestProcess(
                binaryPath("listr"),
                ["--store", directory.appendingPathComponent("t.json").path, "--service", uniqueServiceType()],
                environment: ExitStatuses.noDaemon, input: .closed)
            defer { listr.kill() }
            #expect(try await listr.waitForExit(timeout: .seconds(20)) == 69, "\(listr.transcript)")
            #expect(listr.standardError.contains("listr: error: no DNS-SD daemon answers"), "\(listr.transcript)")
            #expect(!listr.standardError.contains("ready:"), "\(listr.transcript)")
            // The warning about commands from any host says what to do in listr's words.
            #expect(listr.standardError.contains("anyone on the network can run them"), "\(listr.transcript)")
            #expect(listr.standardError.contains("--loopback"), "\(listr.transcript)")
            #expect(listr.standardError.contains("--secret-file"), "\(listr.transcript)")
            #expect(listr.standardError.contains("CHIRP_SECRET"), "\(listr.transcript)")
            #expect(!listr.standardError.contains("Configuration."), "\(listr.transcript)")
        }

        @Test(arguments: [
            (["item", "lst"], "no command 'lst' in 'listrctl item'", "did you mean 'listrctl item list'?"),
            (["itm", "list"], "no command 'itm' in 'listrctl'", "did you mean 'listrctl item'?"),
            (
                ["store", "dumb", "x.json"], "no command 'dumb' in 'listrctl store'",
                "did you mean 'listrctl store dump'?"
            )
        ])
        func aMistypedSubcommandGetsADidYouMean(arguments: [String], error: String, hint: String) async throws {
            let process = try await listrctl(arguments)
            #expect(process.exitStatus == 64, "\(process.transcript)")
            #expect(process.standardError.hasPrefix("listrctl: error: \(error)"), "\(process.transcript)")
            #expect(process.standardError.contains("listrctl: hint: \(hint)"), "\(process.transcript)")
        }

        @Test(arguments: [["item", "done", "-1"], ["item", "remove", "-7"], ["item", "done", "--timeout", "5", "-1"]])
        func aNegativeIdIsRefusedAsNotPositive(arguments: [String]) async throws {
            let process = try await listrctl(arguments)
            #expect(process.exitStatus == 64, "\(process.transcript)")
            #expect(
                process.standardError.hasPrefix("listrctl: error: ID must be a positive number"),
                "\(process.transcript)")
        }

        @Test func versionIsPrinted() async throws {
            for tool in ["listrctl", "listr", "chat", "logdemo"] {
                let process = try await TestProcess(binaryPath(tool), ["--version"], input: .closed)
                #expect(try await process.waitForExit() == 0, "\(process.transcript)")
                let version = process.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
                #expect(version.first?.isNumber == true && version.contains("."), "\(tool): \(process.transcript)")
                #expect(process.standardError.isEmpty, "\(process.transcript)")
            }
        }

        @Test func aTerminalSeesANoteWhileListrctlWaits() async throws {
            let type = uniqueServiceType()
            let command = "\(binaryPath("listrctl")) item list --service \(type) --loopback --timeout 1"
            // On a terminal (script(1) gives it one): a note on standard error while it looks for the app.
            let onTerminal = try await TestProcess(
                "/usr/bin/script", ["-qec", command, "/dev/null"], name: "script", input: .closed)
            _ = try await onTerminal.waitForExit(timeout: .seconds(60))
            #expect(
                onTerminal.standardOutput.contains(
                    "waiting up to 1 s for the app of service '\(type)' (Ctrl-C to stop)"),
                "\(onTerminal.transcript)")
            #expect(onTerminal.standardOutput.contains("listrctl: error: no app found"), "\(onTerminal.transcript)")
            // Captured (not a terminal): no note, only the error.
            let captured = try await listrctl(["item", "list", "--service", type, "--loopback", "--timeout", "1"])
            #expect(captured.exitStatus == 3, "\(captured.transcript)")
            #expect(!captured.standardError.contains("waiting"), "\(captured.transcript)")
        }
    }
}
