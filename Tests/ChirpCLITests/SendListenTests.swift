import Chirp
import Foundation
import Testing

extension ChirpCLITests {
    @Suite struct SendAndListen {
        @Test func sendAndListenRoundTripWithTheChatExample() async throws {
            let type = uniqueServiceType()
            let chat = try await startChat(type, name: "alice")
            defer { chat.closeInput() }
            let listen = try await startChirp([
                "listen", type, "--json", "--count", "2", "--name", "listener", "--interface", "lo", "--timeout", "60"
            ])
            try await chat.waitForLine(containing: "* connected to listener")

            // chirp send -> chirp listen
            let (sent, send) = try await runChirp([
                "send", type, "note", #"{"n": 1, "ok": true}"#, "--peer", "listener", "--name", "sender", "--interface",
                "lo"
            ])
            #expect(sent == 0, "\(send.transcript)")
            #expect(
                send.standardOutput.isEmpty && send.standardError.isEmpty,
                "piped output must stay clean: \(send.transcript)")
            let first = try jsonObject(
                try await listen.waitForLine(containing: "\"note\""))
            #expect(first["sender"] as? String == "sender")
            #expect(first["type"] as? String == "note")
            let payload = try #require(first["payload"] as? [String: Any])
            #expect(payload["n"] as? Int == 1)
            #expect(payload["ok"] as? Bool == true)
            #expect((first["time"] as? String)?.hasSuffix("Z") == true)

            // chat (a typed Swift app) -> chirp listen
            chat.write("hello from chat\n")
            let second = try jsonObject(
                try await listen.waitForLine(containing: "chat.line"))
            #expect(second["sender"] as? String == "alice")
            #expect((second["payload"] as? [String: Any])?["text"] as? String == "hello from chat")
            #expect(try await listen.waitForExit() == 0, "--count 2 ends listen: \(listen.transcript)")

            // chirp send -> chat, the payload from standard input
            let (piped, pipedSend) = try await runChirp(
                ["send", type, "chat.line", "-", "--peer", "alice", "--name", "sender", "--interface", "lo"],
                stdin: #"{"text": "hi alice, from a pipe"}"# + "\n")
            #expect(piped == 0, "\(pipedSend.transcript)")
            try await chat.waitForLine(containing: "[sender] hi alice, from a pipe")
            await chat.stop()
        }

        @Test func listenPrintsTextLines() async throws {
            let type = uniqueServiceType()
            try await withPeer(type, name: "talker") { peer in
                let events = peer.makeEvents()
                let listen = try await startChirp([
                    "listen", type, "--count", "1", "--message-type", "test.question", "--name", "ears", "--interface",
                    "lo", "--timeout", "60"
                ])
                let connected = await first(of: events, timeout: .seconds(20)) { event in
                    if case .peerConnected(let other) = event { return other.name == "ears" }
                    return false
                }
                guard case .peerConnected(let ears) = try #require(connected, "\(listen.transcript)") else { return }
                try await peer.send(Answer(text: "filtered out"), to: ears)
                try await peer.send(Question(text: "shown"), to: ears)
                #expect(try await listen.waitForExit() == 0, "\(listen.transcript)")
                let line = try #require(listen.lines.first, "\(listen.transcript)")
                #expect(line.hasSuffix(#"  talker  test.question  {"text":"shown"}"#), "\(line)")
                #expect(listen.lines.count == 1)
            }
        }

        @Test func requestPrintsTheReply() async throws {
            let type = uniqueServiceType()
            let answer: (Transceiver) throws -> Void = { transceiver in
                try transceiver.respond(to: Question.self) { question, sender in
                    Answer(text: "\(sender.name) asked \(question.text)")
                }
            }
            try await withPeer(type, name: "oracle", configure: answer) { peer in
                let (status, send) = try await runChirp([
                    "send", type, "test.question", #"{"text":"why?"}"#, "--request", "--name", "asker", "--interface",
                    "lo"
                ])
                #expect(status == 0, "\(send.transcript)")
                let reply = try jsonObject(send.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines))
                #expect(reply["text"] as? String == "asker asked why?")

                let (jsonStatus, jsonSend) = try await runChirp([
                    "send", type, "test.question", #"{"text":"how?"}"#, "--request", "--json", "--peer", "oracle",
                    "--interface", "lo"
                ])
                #expect(jsonStatus == 0, "\(jsonSend.transcript)")
                let object = try jsonObject(jsonSend.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines))
                #expect(object["type"] as? String == "test.answer")
                #expect(object["from"] as? String == "oracle")
                #expect(object["fromID"] as? String == peer.configuration.peerID)
                // The name chirp send joined under.
                let asker = "chirp-send-\(Configuration.defaultPeerName)-\(jsonSend.pid)"
                #expect((object["payload"] as? [String: Any])?["text"] as? String == "\(asker) asked how?")
            }
        }
    }
}
