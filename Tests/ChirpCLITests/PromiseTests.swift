import Chirp
import Foundation
import Testing

/// Docs/CLI.md's promises, each with the test that keeps it (the tests of this suite fill the gaps the others left):
///
/// | promise | test |
/// | --- | --- |
/// | errors read `chirp: error:` then `chirp: hint:`; nothing before them without --log-level | Newcomer.usageErrorsAreOneSentenceAndAHint, ExitStatuses.nothingFoundInTimeIs2 |
/// | a closed output pipe ends the command at once, quietly, status 0 | ClosedPipe.*, Newcomer.listenEndsQuietlyWhenItsReaderGoesAway, Newcomer.logsJSONEndsQuietlyWhenItsReaderGoesAway |
/// | what peers choose is printed escaped; JSON escapes it as JSON does | Newcomer.aForgedTypeNameShowsEscapedInListen, Newcomer.jsonLinesEscapeWhatPeersSendAndStayValidJSON |
/// | piped output holds results only (status lines on a terminal only) | SendAndListen.sendAndListenRoundTripWithTheChatExample, Browse.onceShowsPeersWithTheirMetadata |
/// | `--json`: one object per line, keys sorted, payloads as JSON values | Promises.jsonLinesAreOneObjectWithSortedKeys, SendAndListen.* |
/// | options before the subcommand; a negative number is a value, then refused in words | Newcomer.chirpTakesItsOptionsBeforeTheSubcommandToo, Newcomer.usageErrorsAreOneSentenceAndAHint |
/// | `--version` | Papercuts.versionIsPrinted |
/// | browse: one line per change into a pipe, `+` and `-` | Promises.browseIntoAPipePrintsOneLinePerChange |
/// | browse: `--once` table, `--json`, every type without TYPE | Browse.*, Secrets.browseShowsWhichPeersRequireASecret |
/// | listen: text and JSON lines, raw bytes as hex and base64 | SendAndListen.listenPrintsTextLines, Promises.listenShowsRawBytesAsHexAndBase64 |
/// | listen: answers no request ("no responder") | Promises.listenAnswersNoRequest |
/// | listen: a refusing peer is reported on standard error, always | Promises.listenReportsAPeerThatRefusesIt |
/// | send: invalid JSON refused before anything is sent (64) | JSONPayload.*, ExitStatuses.badInputIs64, ExitStatuses.invalidJSONOnStandardInputIs64AndNothingIsSent |
/// | send: every peer without --peer, one with --peer | Promises.sendGoesToEveryPeerOrToTheOneNamed |
/// | send --request: the reply, `--json` object; a command reply as itself | SendAndListen.requestPrintsTheReply, Newcomer.aCommandReplyIsShownAsItsText, Papercuts.requestJSONShowsACommandReplyItselfNotItsWireForm |
/// | send, ping: an app is preferred to chirp's own peers | Papercuts.pingAndRequestPreferAnAppToChirpsOwnPeers |
/// | ping: the output and summary of ping(8) | Ping.reportsTheNumberOfRepliesAskedFor |
/// | console: runs chirp-console with the same arguments; 69 when it is not found | Console/: ChirpConsoleCommandTests, Promises.consoleWithoutChirpConsoleIs69 |
/// | 0 success; browse/listen/logs stopped by Ctrl-C, --timeout or --count | Interrupts.listenAndBrowseAreStoppedWithStatus0, Newcomer.logsExitsZeroWhenInterruptedWhileFollowing, SendAndListen.* |
/// | 1 other failure | (not tested: the listening socket cannot be made to fail from outside) |
/// | 2 nothing found in time; nothing at --connect | ExitStatuses.nothingFoundInTimeIs2, ExitStatuses.nothingAtConnectIs2, Papercuts.connectingToSomethingElseSaysItIsNotAChirpPeer |
/// | 3 no responder, no reply in time, a pong missing | ExitStatuses.noResponderIsAPeerFailure3, Promises.noReplyInTimeIs3, Promises.aMissingPongIs3 |
/// | 4 refused | Secrets.aMissingOrWrongSecretIsRefusedWithStatus4 |
/// | 64 bad input, a secret on the command line | ExitStatuses.badInputIs64, Secrets.aSecretOnTheCommandLineIsRefused |
/// | 69 no DNS-SD daemon | ExitStatuses.noDaemonIs69, Newcomer.logsWithoutADaemonExits69WithAHint |
/// | 130 SIGINT or SIGTERM while waiting for a peer or a reply | ExitStatuses.interruptWhileWaitingIs130, Interrupts.sendRequestIsInterruptedWhileItWaitsForTheReply |
/// | a second Ctrl-C ends the process at once; ping prints its summary | Interrupts.aSecondSignalEndsTheProcessAtOnce, Interrupts.pingPrintsItsSummaryWhenInterrupted |
/// | CHIRP_DISCOVERY chooses the backend | Promises.bothDiscoveryBackendsFindThePeers |
/// | CHIRP_SECRET, --secret-file | Secrets.sendWithTheRightSecretFromTheEnvironmentOrAFile |
///
/// Not tested here: what only a terminal shows (the status line and its erasure, the live browse table), which needs
/// a pseudo-terminal.
extension ChirpCLITests {
    @Suite struct Promises {
        @Test func jsonLinesAreOneObjectWithSortedKeys() async throws {
            let type = uniqueServiceType()
            let listen = try await startChirp([
                "listen", type, "--json", "--count", "1", "--name", "ears", "--interface", "lo", "--timeout", "60"
            ])
            try await withPeer(type, name: "talker") { peer in
                let ears = try #require(await waitForPeer(named: "ears", on: peer), "\(listen.transcript)")
                try await peer.send(Question(text: "sorted?"), to: ears)
                #expect(try await listen.waitForExit() == 0, "\(listen.transcript)")
            }
            let line = try #require(listen.lines.first, "\(listen.transcript)")
            #expect(listen.lines.count == 1)
            let object = try jsonObject(line)
            #expect((object["payload"] as? [String: Any])?["text"] as? String == "sorted?")
            // Keys in sorted order, as they appear on the line.
            let keys = ["payload", "sender", "senderID", "time", "type"]
            let positions = keys.compactMap { line.range(of: "\"\($0)\":")?.lowerBound }
            #expect(positions.count == keys.count && positions == positions.sorted(), "\(line)")
        }

        @Test func browseIntoAPipePrintsOneLinePerChange() async throws {
            let type = uniqueServiceType()
            let browse = try await startChirp(["browse", type, "--interface", "lo"])
            let peer = try await startPeer(type, name: "fleeting", metadata: ["room": "lobby"])
            let port = peer.port ?? -1
            let appeared = try await withTeardown {
                try await browse.waitForLine(containing: "fleeting")
            } teardown: {
                await peer.shutdown()
            }
            #expect(appeared.hasPrefix("+ fleeting  "), "\(appeared)")
            #expect(appeared.contains("127.0.0.1:\(port)"), "\(appeared)")
            #expect(appeared.contains(String(peer.configuration.peerID.prefix(8))), "\(appeared)")
            #expect(appeared.hasSuffix("  no  room=lobby"), "\(appeared)")
            let left = try await browse.waitForLine("the peer leaving") { $0.hasPrefix("- fleeting  ") }
            #expect(left.dropFirst(2) == appeared.dropFirst(2))
            browse.signal(SIGINT)
            #expect(try await browse.waitForExit() == 0, "\(browse.transcript)")
        }

        @Test func listenShowsRawBytesAsHexAndBase64() async throws {
            let type = uniqueServiceType()
            let text = try await startChirp([
                "listen", type, "--count", "1", "--name", "text-ears", "--interface", "lo", "--timeout", "60"
            ])
            let json = try await startChirp([
                "listen", type, "--count", "1", "--json", "--name", "json-ears", "--interface", "lo", "--timeout", "60"
            ])
            try await withPeer(type, name: "binary") { peer in
                for name in ["text-ears", "json-ears"] {
                    let ears = try #require(await waitForPeer(named: name, on: peer))
                    try await peer.send(Data([0x00, 0x01, 0xFE, 0xFF]), to: ears)
                }
                #expect(try await text.waitForExit() == 0, "\(text.transcript)")
                #expect(try await json.waitForExit() == 0, "\(json.transcript)")
            }
            #expect(text.lines.first?.hasSuffix("<4 bytes: 0001feff>") == true, "\(text.transcript)")
            let object = try jsonObject(try #require(json.lines.first, "\(json.transcript)"))
            #expect(object["payload"] as? [String: String] == ["base64": "AAH+/w=="], "\(json.transcript)")
        }

        @Test func listenAnswersNoRequest() async throws {
            let type = uniqueServiceType()
            let listen = try await startChirp(["listen", type, "--name", "ears", "--interface", "lo"])
            try await withPeer(type, name: "asker") { peer in
                let ears = try #require(await waitForPeer(named: "ears", on: peer), "\(listen.transcript)")
                await #expect(throws: ChirpError.noResponder(type: Question.chirpTypeName, peer: ears)) {
                    _ = try await peer.request(Question(text: "anyone?"), to: ears, as: Answer.self)
                }
            }
            await listen.stop()
        }

        @Test func listenReportsAPeerThatRefusesIt() async throws {
            let type = uniqueServiceType()
            try await withPeer(type, name: "vault", secret: "s3cret-" + UUID().uuidString) { _ in
                let listen = try await startChirp(
                    ["listen", type, "--name", "ears", "--interface", "lo"], environment: ["CHIRP_SECRET": nil])
                #expect(
                    await listen.waitForError(
                        containing: "chirp: warning: cannot connect: vault requires a shared secret"),
                    "\(listen.transcript)")
                await listen.stop()
            }
        }

        @Test func sendGoesToEveryPeerOrToTheOneNamed() async throws {
            let type = uniqueServiceType()
            let heard = Collected<String>()
            let listen: (String) -> (Transceiver) throws -> Void = { name in
                { transceiver in
                    try transceiver.receive(ChatLine.self) { line in heard.append("\(name): \(line.text)") }
                }
            }
            try await withPeer(type, name: "ann", configure: listen("ann")) { _ in
                try await withPeer(type, name: "bob", configure: listen("bob")) { _ in
                    let (status, send) = try await runChirp([
                        "send", type, "chat.line", #"{"text":"all"}"#, "--interface", "lo", "--timeout", "20"
                    ])
                    #expect(status == 0, "\(send.transcript)")
                    try await heard.waitForCount(2)
                    let (named, sendToBob) = try await runChirp([
                        "send", type, "chat.line", #"{"text":"bob only"}"#, "--peer", "bob", "--interface", "lo"
                    ])
                    #expect(named == 0, "\(sendToBob.transcript)")
                    try await heard.waitForCount(3)
                    // The positive control of "bob only": one more broadcast, after which ann would have had both.
                    _ = try await runChirp([
                        "send", type, "chat.line", #"{"text":"end"}"#, "--interface", "lo", "--timeout", "20"
                    ])
                    try await heard.waitForCount(5)
                    #expect(
                        Set(heard.values)
                            == ["ann: all", "bob: all", "bob: bob only", "ann: end", "bob: end"], "\(heard.values)")
                }
            }
        }

        @Test func noReplyInTimeIs3() async throws {
            let type = uniqueServiceType()
            let slow: (Transceiver) throws -> Void = { transceiver in
                try transceiver.respond(to: SlowQuestion.self) { _, _ async throws -> Answer in
                    try await Task.sleep(for: .seconds(600))
                    return Answer(text: "late")
                }
            }
            try await withPeer(type, name: "sloth", configure: slow) { _ in
                let (status, send) = try await runChirp([
                    "send", type, "test.slow", "{}", "--request", "--interface", "lo", "--timeout", "2"
                ])
                #expect(status == 3, "\(send.transcript)")
                #expect(send.standardError.hasPrefix("chirp: error: "), "\(send.transcript)")
            }
        }

        @Test func aMissingPongIs3() async throws {
            let type = uniqueServiceType()
            let chat = try await startChat(type, name: "frozen")
            try await waitUntilAdvertised(type, name: "frozen")
            let ping = try await startChirp([
                "ping", type, "--peer", "frozen", "-c", "3", "-i", "0.3", "-W", "0.5", "--interface", "lo"
            ])
            try await ping.waitForLine(containing: "pong from frozen: seq=1")
            chat.signal(SIGSTOP)  // its library cannot answer the next pings
            let status = try? await ping.waitForExit(timeout: .seconds(30))
            chat.signal(SIGCONT)
            await chat.stop()
            #expect(status == 3, "\(ping.transcript)")
            #expect(ping.lines.contains { $0.hasPrefix("no pong from frozen: seq=") }, "\(ping.transcript)")
            #expect(ping.lines.contains("--- frozen ping statistics ---"), "\(ping.transcript)")
        }

        @Test func consoleWithoutChirpConsoleIs69() async throws {
            // chirp alone in a directory, and no PATH: chirp-console is nowhere to be found.
            let chirp = binaryPath("chirp")
            let directory = ((chirp as NSString).deletingLastPathComponent as NSString)
                .appendingPathComponent("../chirp-alone-\(UUID().uuidString)")
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let alone = (directory as NSString).appendingPathComponent("chirp")
            if link(chirp, alone) != 0 { try FileManager.default.copyItem(atPath: chirp, toPath: alone) }
            let process = try await TestProcess(alone, ["console"], environment: ["PATH": "/nonexistent"])
            process.closeInput()
            #expect(try await process.waitForExit(timeout: .seconds(30)) == 69, "\(process.transcript)")
            #expect(process.standardError.hasPrefix("chirp: error: chirp-console not found"), "\(process.transcript)")
            #expect(process.standardError.contains("chirp: hint: "), "\(process.transcript)")
        }

        @Test(arguments: ["avahi", "dns-sd"])
        func bothDiscoveryBackendsFindThePeers(backend: String) async throws {
            let type = uniqueServiceType()
            try await withPeer(type, name: "found") { _ in
                let (status, browse) = try await runChirp(
                    ["browse", type, "--once", "--json", "--interface", "lo", "--timeout", "3"],
                    environment: ["CHIRP_DISCOVERY": backend])
                #expect(status == 0, "\(browse.transcript)")
                #expect(try browse.lines.map(jsonObject).contains { $0["name"] as? String == "found" })
            }
        }
    }
}
