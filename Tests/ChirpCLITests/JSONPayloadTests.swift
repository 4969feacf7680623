import Chirp
import Foundation
import Testing

/// `chirp send` refuses a payload that is not RFC 8259 JSON, with status 64, before it joins: nothing is sent.
extension ChirpCLITests {
    @Suite struct JSONPayload {
        @Test func aTrailingCommaIsRefusedAndNothingIsSent() async throws {
            let type = uniqueServiceType()
            let heard = Collected<String>()
            let listen: (Transceiver) throws -> Void = { transceiver in
                try transceiver.receive(ChatLine.self) { line in heard.append(line.text) }
            }
            try await withPeer(type, name: "ears", configure: listen) { _ in
                let (status, send) = try await runChirp([
                    "send", type, "chat.line", #"{"text":"x",}"#, "--interface", "lo", "--timeout", "10"
                ])
                #expect(status == 64, "\(send.transcript)")
                #expect(
                    send.standardError.hasPrefix(
                        "chirp: error: invalid JSON from the JSON argument: a trailing comma before '}' (line 1, column 12)"
                    ), "\(send.transcript)")
                #expect(send.standardError.contains("nothing was sent"), "\(send.transcript)")
                // The positive control: a valid payload sent after it arrives, and is the only one that did.
                let (sent, control) = try await runChirp([
                    "send", type, "chat.line", #"{"text":"y"}"#, "--interface", "lo", "--timeout", "10"
                ])
                #expect(sent == 0, "\(control.transcript)")
                try await heard.waitForCount(1)
                #expect(heard.values == ["y"])
            }
        }

        @Test func json5OnStandardInputIsRefusedToo() async throws {
            let (status, send) = try await runChirp(
                ["send", uniqueServiceType(), "chat.line", "-", "--interface", "lo", "--timeout", "10"],
                stdin: "{\n  // a comment\n  \"text\": 'x'\n}\n")
            #expect(status == 64, "\(send.transcript)")
            #expect(
                send.standardError.hasPrefix(
                    "chirp: error: invalid JSON from standard input: a comment; JSON has none (line 2, column 3)"),
                "\(send.transcript)")
        }
    }
}
