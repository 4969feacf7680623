import Foundation
import Testing

/// The `chat` example as its help tells a user to run it: piped input, exit statuses, names in the user's words, a
/// missing DNS-SD daemon, leaving the room.
extension ChirpCLITests {
    @Suite(.timeLimit(.minutes(5))) struct Chat {
        /// `echo "hello" | chat ...` through a shell, as the help's example (with `--loopback` added: tests stay on
        /// this machine).
        func pipe(_ text: String, into arguments: [String]) async throws -> TestProcess {
            let command =
                "echo \"\(text)\" | \(binaryPath("chat")) "
                + arguments.map { "'\($0)'" }.joined(separator: " ")
            return try await TestProcess("/bin/bash", ["-c", command], name: "echo | chat", input: .closed)
        }

        @Test func thePipedExampleOfTheHelpReachesThePeer() async throws {
            let type = uniqueServiceType()
            let alice = try await startChat(type, name: "alice")
            defer { alice.kill() }
            try await waitUntilAdvertised(type, name: "alice")

            let bot = try await pipe("hello", into: ["--name", "bot", "--service", type, "--loopback", "--linger", "2"])
            #expect(try await bot.waitForExit(timeout: .seconds(60)) == 0, "\(bot.transcript)")
            try await alice.waitForLine(containing: "[bot] hello")
            #expect(!bot.standardError.contains("reached nobody"), "\(bot.transcript)")
            alice.closeInput()
            await alice.stop()
        }

        @Test func aPipedLineThatReachesNobodyIsSaidAndTheStatusIs2() async throws {
            let type = uniqueServiceType()
            let bot = try await pipe("hello", into: ["--name", "bot", "--service", type, "--loopback", "--wait", "1"])
            #expect(try await bot.waitForExit(timeout: .seconds(60)) == 2, "\(bot.transcript)")
            #expect(bot.standardError.contains("chat: warning: no peer is connected: this line reached nobody"))
            #expect(bot.standardError.contains("chat: error: 1 line reached no peer"), "\(bot.transcript)")
        }

        @Test func leavingDoesNotAnnounceTheOthersAsLeaving() async throws {
            let type = uniqueServiceType()
            let alice = try await startChat(type, name: "alice")
            defer { alice.kill() }
            let bob = try await startChat(type, name: "bob")
            defer { bob.kill() }
            try await alice.waitForLine(containing: "* connected to bob")
            try await bob.waitForLine(containing: "* connected to alice")

            alice.closeInput()
            #expect(try await alice.waitForExit() == 0, "\(alice.transcript)")
            // bob sees alice leave (the line the old alice also printed about bob as it left)...
            try await bob.waitForLine(containing: "* alice left")
            // ...and alice, who left, did not announce bob's departure.
            #expect(!alice.standardOutput.contains("* bob left"), "\(alice.transcript)")
            bob.closeInput()
            await bob.stop()
        }

        @Test(arguments: [
            (["--service", "abcdefghijklmnop"], "chat: error: --service: invalid service type 'abcdefghijklmnop'"),
            (["--name", ""], "chat: error: --name: a name cannot be empty"),
            (["--name", String(repeating: "n", count: 201)], "chat: error: --name: a name must be at most 200 bytes"),
            (["--wait", "-1"], "chat: error: --wait must be 0 to 3600 seconds, got -1")
        ])
        func badInputIs64InTheUsersWords(arguments: [String], expected: String) async throws {
            let chat = try await TestProcess(
                binaryPath("chat"), ["--loopback"] + arguments, environment: ["COLUMNS": "100"], input: .closed)
            #expect(try await chat.waitForExit() == 64, "\(chat.transcript)")
            #expect(chat.standardError.hasPrefix(expected), "\(chat.transcript)")
            #expect(!chat.standardError.contains("invalid configuration"), "\(chat.transcript)")
            #expect(!chat.standardError.contains("peerName"), "\(chat.transcript)")
        }

        @Test(arguments: [true, false])
        func noDaemonIs69AtOnce(inputOpen: Bool) async throws {
            let chat = try await TestProcess(
                binaryPath("chat"), ["--name", "alice", "--service", uniqueServiceType(), "--loopback"],
                environment: ExitStatuses.noDaemon, input: inputOpen ? .pipe : .closed)
            defer { chat.kill() }
            // "At once": long before any timeout of chat's (the bound is generous for a loaded machine).
            #expect(try await chat.waitForExit(timeout: .seconds(20)) == 69, "\(chat.transcript)")
            #expect(chat.standardError.contains("chat: error: no DNS-SD daemon answers"), "\(chat.transcript)")
            #expect(chat.standardError.contains("chat: hint: start it with"), "\(chat.transcript)")
        }
    }
}
