import Chirp
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The characters a JSON line must not carry raw (those ``UntrustedText`` escapes).
enum UntrustedTextProbe {
    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069: return true
        default: return false
        }
    }
}

/// What a newcomer ran into, checked with the real binaries: a closed pipe, signals, what peers send reaching the
/// terminal, one error style, options before the subcommand, numbers and addresses in words.
extension ChirpCLITests {
    @Suite struct Newcomer {
        // MARK: - A closed pipe

        @Test func listenEndsQuietlyWhenItsReaderGoesAway() async throws {
            let type = uniqueServiceType()
            try await withPeer(type, name: "sender") { sender in
                let (process, output, errors) = try startPiped(
                    "chirp", ["listen", type, "--interface", "lo", "--name", "listener"])
                defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }

                // Messages flow until the reader goes away, like `chirp listen TYPE | head -1`.
                let sending = Task {
                    var count = 0
                    while !Task.isCancelled {
                        for peer in sender.connectedPeers {
                            try? await sender.send(ChatText(text: "line \(count)"), to: peer)
                        }
                        count += 1
                        try? await Task.sleep(for: .milliseconds(20))
                    }
                }
                defer { sending.cancel() }
                let reader = output.fileHandleForReading
                let firstBytes = await firstChunk(of: reader, timeout: .seconds(30))
                #expect(String(decoding: firstBytes ?? Data(), as: UTF8.self).contains("chat.text"))  // it was printing
                try reader.close()  // `head -1` exits

                let ended = await eventually(timeout: .seconds(30)) { !process.isRunning }
                #expect(ended, "chirp listen kept running with nobody reading its output")
                if ended {
                    #expect(process.terminationReason == .exit && process.terminationStatus == 0)
                    let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                    #expect(stderr.isEmpty, "quietly: \(stderr)")
                }
            }
        }

        @Test func logsJSONEndsQuietlyWhenItsReaderGoesAway() async throws {
            let type = uniqueServiceType()
            let app = Process()
            app.executableURL = try requireBinary("logdemo")
            app.arguments = ["--name", "shop", "--service", type, "--interface", "lo", "--plain", "--rate", "500"]
            app.standardOutput = FileHandle.nullDevice
            app.standardError = FileHandle.nullDevice
            try app.run()
            defer { if app.isRunning { kill(app.processIdentifier, SIGKILL) } }
            let (process, output, errors) = try startPiped(
                "chirp", ["logs", "--service", type, "--interface", "lo", "--follow", "--json"])
            defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }

            // Records flow until the reader goes away, like `chirp logs --json | head -2`.
            let reader = output.fileHandleForReading
            let firstBytes = await firstChunk(of: reader, timeout: .seconds(30))
            #expect(String(decoding: firstBytes ?? Data(), as: UTF8.self).contains("\"event\""))  // it was printing
            try reader.close()

            let ended = await eventually(timeout: .seconds(30)) { !process.isRunning }
            #expect(ended, "chirp logs kept running with nobody reading its output")
            if ended {
                #expect(process.terminationReason == .exit && process.terminationStatus == 0)
                let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                #expect(!stderr.contains("error"), "quietly (its notes aside): \(stderr)")
            }
        }

        // MARK: - Signals

        @Test(arguments: [SIGINT, SIGTERM])
        func logsExitsZeroWhenInterruptedWhileFollowing(signal: Int32) async throws {
            let type = uniqueServiceType()
            // chirp logs is a tool: the watcher reports it joining and leaving because it asks for tools.
            try await withPeer(type, name: "watcher", includesTools: true) { watcher in
                let events = watcher.makeEvents()
                let logs = try await startChirp(["logs", "--service", type, "--interface", "lo", "--follow"])
                // Once the viewer has joined the service, its interrupt handling is in place.
                let joined = await first(of: events, timeout: .seconds(30)) { event in
                    if case .peerConnected(let peer) = event { return peer.name.hasPrefix("chirp-logs-") }
                    return false
                }
                try #require(joined != nil, "chirp logs never joined \(type)\n\(logs.transcript)")
                logs.signal(signal)
                let status = try? await logs.waitForExit(timeout: .seconds(30))
                #expect(status == 0, "chirp logs after signal \(signal)\n\(logs.transcript)")
                // The goodbye reached the peer: it reports the viewer gone (not a heartbeat timeout much later).
                let left = await first(of: events, timeout: .seconds(20)) { event in
                    if case .peerDisconnected(let peer) = event { return peer.name.hasPrefix("chirp-logs-") }
                    return false
                }
                #expect(left != nil)
            }
        }

        // MARK: - What peers send reaches the terminal escaped

        @Test func aForgedTypeNameShowsEscapedInListen() async throws {
            let type = uniqueServiceType()
            let listen = try await startChirp([
                "listen", type, "--interface", "lo", "--name", "listener", "--count", "1", "--timeout", "60"
            ])
            try await withPeer(type, name: "mallory\u{1B}]0;TITLE\u{07}") { sender in
                let peer = try #require(await waitForPeer(named: "listener", on: sender))
                let forged = "x\n2026-11-24T10:00:00 critical receiver: FORGED LINE\u{1B}]0;TITLE\u{07}"
                try await sender.send(RawMessage(typeName: forged, payload: Data("{}".utf8)), to: peer)
                let status = try? await listen.waitForExit(timeout: .seconds(60))
                #expect(status == 0, "\(listen.transcript)")
                // The positive control: the message was printed, forged text and all, but on one line and without ESC.
                #expect(listen.lines.count == 1, "\(listen.transcript)")
                #expect(
                    listen.standardOutput.contains(
                        #"x\n2026-11-24T10:00:00 critical receiver: FORGED LINE\u{1B}]0;TITLE\u{7}"#))
                #expect(listen.standardOutput.contains(#"mallory\u{1B}]0;TITLE\u{7}"#))
                #expect(!listen.standardOutput.contains("\u{1B}") && !listen.standardError.contains("\u{1B}"))
            }
        }

        @Test func jsonLinesEscapeWhatPeersSendAndStayValidJSON() async throws {
            let type = uniqueServiceType()
            let listen = try await startChirp([
                "listen", type, "--interface", "lo", "--name", "listener", "--count", "1", "--timeout", "60", "--json"
            ])
            try await withPeer(type, name: "mallory\u{7F}\u{9B}") { sender in
                let peer = try #require(await waitForPeer(named: "listener", on: sender))
                let typeName = "x\u{7F}\u{9B}31m\u{2028}\u{202E}y"
                try await sender.send(RawMessage(typeName: typeName, payload: Data("{}".utf8)), to: peer)
                let status = try? await listen.waitForExit(timeout: .seconds(60))
                #expect(status == 0, "\(listen.transcript)")
                let line = try #require(listen.lines.first)
                // Valid JSON, every such character a \uXXXX escape, and the value exactly what the peer sent.
                let object = try #require(
                    try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
                #expect(object["type"] as? String == typeName, "\(line)")
                #expect(line.contains(#"x\u007f\u009b31m\u2028\u202ey"#), "\(line)")
                #expect(!line.unicodeScalars.contains { UntrustedTextProbe.isControl($0) })
            }
        }

        // MARK: - One error style

        @Test(arguments: [
            (["--bogus"], "chirp: error: unknown option '--bogus'"),
            (["help", "bogus"], "chirp: error: no command 'bogus'"),
            (
                ["listen", "chat", "--timeout", "0"],
                "chirp: error: --timeout must be greater than 0 and at most 86400 seconds, got 0"
            ),
            (
                ["listen", "chat", "--timeout", "-1"],
                "chirp: error: --timeout must be greater than 0 and at most 86400 seconds, got -1"
            ),
            (["send", "chat"], "chirp: error: missing expected argument")
        ])
        func usageErrorsAreOneSentenceAndAHint(arguments: [String], expected: String) async throws {
            let (status, process) = try await runChirp(arguments)
            #expect(status == 64, "\(process.transcript)")
            let lines = process.standardError.split(separator: "\n").map(String.init)
            #expect(lines.first?.hasPrefix(expected) == true, "\(process.transcript)")
            #expect(lines.count == 2 && lines[1].hasPrefix("chirp: hint: see 'chirp"), "\(process.transcript)")
            #expect(!process.standardError.contains("Error:") && !process.standardError.contains("Usage:"))
            #expect(process.standardOutput.isEmpty)
        }

        @Test func listrctlSpeaksTheSameStyleAndTakesOptionsBeforeTheSubcommand() async throws {
            let listrctl = binaryPath("listrctl")
            let type = uniqueServiceType()
            // Options before the subcommand: parsed (the error names the service), not "unknown option".
            let before = try await TestProcess(
                listrctl, ["--service", type, "--loopback", "--timeout", "1", "item", "list"])
            before.closeInput()
            let status = try? await before.waitForExit(timeout: .seconds(60))
            #expect(status == 3, "\(before.transcript)")  // no app found
            #expect(
                before.standardError.hasPrefix("listrctl: error: no app found on service '\(type)'"),
                "\(before.transcript)")
            #expect(
                before.standardError.split(separator: "\n").count == 1,
                "no raw log line before the error: \(before.transcript)")

            // A timeout too large for an integer is refused in words (its message once trapped while it was built).
            let huge = try await TestProcess(listrctl, ["--timeout", "1e19", "item", "list"])
            huge.closeInput()
            #expect(try await huge.waitForExit(timeout: .seconds(30)) == 64, "\(huge.transcript)")
            #expect(
                huge.standardError.hasPrefix(
                    "listrctl: error: --timeout must be greater than 0 and at most 86400 seconds, got 1e+19"),
                "\(huge.transcript)")

            let bad = try await TestProcess(listrctl, ["item", "frobnicate"])
            bad.closeInput()
            #expect(try await bad.waitForExit(timeout: .seconds(30)) == 64)
            #expect(bad.standardError.hasPrefix("listrctl: error: "), "\(bad.transcript)")
            #expect(bad.standardError.contains("listrctl: hint: see 'listrctl item --help'"), "\(bad.transcript)")
        }

        @Test func chirpTakesItsOptionsBeforeTheSubcommandToo() async throws {
            let (status, process) = try await runChirp([
                "--interface", "lo", "--timeout", "1", "send", uniqueServiceType(), "x", "{}"
            ])
            #expect(status == 2, "\(process.transcript)")  // parsed and run: nobody there
            #expect(process.standardError.hasPrefix("chirp: error: "), "\(process.transcript)")
        }

        // MARK: - Errors in words

        @Test func aRefusedConnectionIsSaidInWords() async throws {
            let (status, process) = try await runChirp([
                "send", uniqueServiceType(), "x", "{}", "--connect", "127.0.0.1:1"
            ])
            #expect(status == 2, "\(process.transcript)")
            #expect(process.standardError.contains("connection refused"), "\(process.transcript)")
            #expect(
                !process.standardError.contains("SingleConnectionFailure") && !process.standardError.contains("errno"),
                "\(process.transcript)")
        }

        @Test func logsWithoutADaemonExits69WithAHint() async throws {
            let (status, process) = try await runChirp(
                ["logs", "--service", uniqueServiceType()], environment: ExitStatuses.noDaemon, timeout: .seconds(60))
            #expect(status == 69, "\(process.transcript)")
            #expect(process.standardError.hasPrefix("chirp: error: no DNS-SD daemon answers"), "\(process.transcript)")
            #expect(process.standardError.contains("chirp: hint: "))
        }

        // MARK: - A command reply shown as its text

        @Test func aCommandReplyIsShownAsItsText() async throws {
            let type = uniqueServiceType()
            // What a ChirpCommands app answers: a binary reply, kind byte `t`, then the text.
            let answer: (Transceiver) throws -> Void = { transceiver in
                try transceiver.respond(to: ListItemsRequest.self) { _, _ in
                    Data("t#1 [x] buy milk\n#2 [ ] \u{1B}[2Jeggs".utf8)
                }
            }
            try await withPeer(type, name: "kitchen", configure: answer) { _ in
                let (status, process) = try await runChirp([
                    "send", type, "listr.item.list", "{}", "--request", "--interface", "lo"
                ])
                #expect(status == 0, "\(process.transcript)")
                #expect(process.lines == ["#1 [x] buy milk", #"#2 [ ] \u{1B}[2Jeggs"#], "\(process.transcript)")
            }
        }

        // MARK: - chat's help

        @Test func chatHelpFitsEightyColumnsAndHasItsExitStatuses() async throws {
            let chat = try await TestProcess(binaryPath("chat"), ["--help"], environment: ["COLUMNS": "80"])
            chat.closeInput()
            #expect(try await chat.waitForExit(timeout: .seconds(30)) == 0)
            let discussion = chat.lines.filter { !$0.hasPrefix("USAGE:") }
            #expect(discussion.allSatisfy { $0.count <= 80 }, "\(discussion.filter { $0.count > 80 })")
            #expect(chat.standardOutput.contains("EXIT STATUS"))
        }
    }
}

/// Waits until `transceiver` is connected to a peer named `name`.
func waitForPeer(named name: String, on transceiver: Transceiver, timeout: Duration = .seconds(30)) async -> Peer? {
    await valueWithin(timeout) {
        while true {
            if let peer = transceiver.connectedPeers.first(where: { $0.name == name }) { return peer }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}

/// Starts the package's executable `name` as a Foundation `Process` with pipes for its outputs, which the test reads
/// (and closes, as `head` does) itself.
func startPiped(_ name: String, _ arguments: [String]) throws -> (process: Process, output: Pipe, errors: Pipe) {
    let process = Process()
    process.executableURL = try requireBinary(name)
    process.arguments = arguments
    let (output, errors) = (Pipe(), Pipe())
    process.standardOutput = output
    process.standardError = errors
    try process.run()
    return (process, output, errors)
}

/// The first bytes readable from `handle`, or `nil` after `timeout`.
func firstChunk(of handle: FileHandle, timeout: Duration) async -> Data? {
    await valueWithin(timeout) { await Task.detached { handle.availableData }.value }
}
