import Chirp
import Foundation
import Testing

/// chirp and chat with shared secrets: CHIRP_SECRET or --secret-file, refusals with their own exit status (4), and a
/// secret that never shows in any output.
extension ChirpCLITests {
    @Suite struct Secrets {
        static func randomSecret() -> String { "s3cret-" + UUID().uuidString }

        /// A file holding `secret`, readable by its owner only.
        static func secretFile(_ secret: String) throws -> URL {
            let url = FileManager.default.temporaryDirectory.appendingPathComponent("chirp-secret-\(UUID().uuidString)")
            #expect(
                FileManager.default.createFile(
                    atPath: url.path, contents: Data(secret.utf8), attributes: [.posixPermissions: 0o600]))
            return url
        }

        @Test func browseShowsWhichPeersRequireASecret() async throws {
            let type = uniqueServiceType()
            let secret = Self.randomSecret()
            try await withPeer(type, name: "locked", secret: secret) { _ in
                try await withPeer(type, name: "open") { _ in
                    try await waitUntilAdvertised(type, name: "locked")
                    try await waitUntilAdvertised(type, name: "open")

                    let (status, browse) = try await runChirp([
                        "browse", type, "--once", "--interface", "lo", "--timeout", "2"
                    ])
                    #expect(status == 0, "\(browse.transcript)")
                    let lines = browse.lines
                    #expect(lines.first?.contains("SECRET") == true, "\(browse.transcript)")
                    let lockedRow = try #require(lines.first { $0.hasPrefix("locked ") }, "\(browse.transcript)")
                    let openRow = try #require(lines.first { $0.hasPrefix("open ") }, "\(browse.transcript)")
                    #expect(lockedRow.contains(" required "), "\(lockedRow)")
                    #expect(!openRow.contains("required"), "\(openRow)")

                    let (jsonStatus, json) = try await runChirp([
                        "browse", type, "--once", "--json", "--interface", "lo", "--timeout", "2"
                    ])
                    #expect(jsonStatus == 0, "\(json.transcript)")
                    let objects = try json.lines.map(jsonObject)
                    #expect(
                        objects.first { $0["name"] as? String == "locked" }?["requiresSecret"] as? Bool == true,
                        "\(json.transcript)")
                    #expect(
                        objects.first { $0["name"] as? String == "open" }?["requiresSecret"] as? Bool == false,
                        "\(json.transcript)")
                    for output in [browse.standardOutput, browse.standardError, json.standardOutput] {
                        #expect(!output.contains(secret))
                    }
                }
            }
        }

        @Test func sendWithTheRightSecretFromTheEnvironmentOrAFile() async throws {
            let type = uniqueServiceType()
            let secret = Self.randomSecret()
            let received = ReceivedTexts()
            let collect: (Transceiver) throws -> Void = { transceiver in
                try transceiver.receive(RawMessage.self) { message, _ in
                    received.append(String(decoding: message.payload, as: UTF8.self))
                }
            }
            try await withPeer(type, name: "vault", secret: secret, configure: collect) { _ in

                let (viaEnvironment, first) = try await runChirp(
                    ["send", type, "note", #"{"n":1}"#, "--interface", "lo", "--name", "sender1"],
                    environment: ["CHIRP_SECRET": secret])
                #expect(viaEnvironment == 0, "\(first.transcript)")
                let file = try Self.secretFile(secret)
                defer { try? FileManager.default.removeItem(at: file) }
                let (viaFile, second) = try await runChirp(
                    [
                        "send", type, "note", #"{"n":2}"#, "--interface", "lo", "--name", "sender2", "--secret-file",
                        file.path
                    ],
                    environment: ["CHIRP_SECRET": ""])
                #expect(viaFile == 0, "\(second.transcript)")
                #expect(
                    await eventually(timeout: .seconds(20)) { received.values.count == 2 },
                    "\(received.values)")
                #expect(Set(received.values) == [#"{"n":1}"#, #"{"n":2}"#])
                for output in [first.standardOutput, first.standardError, second.standardOutput, second.standardError] {
                    #expect(!output.contains(secret))
                }
            }
        }

        @Test func aMissingOrWrongSecretIsRefusedWithStatus4() async throws {
            let type = uniqueServiceType()
            let secret = Self.randomSecret()
            let wrong = Self.randomSecret()
            let received = ReceivedTexts()
            let collect: (Transceiver) throws -> Void = { transceiver in
                try transceiver.receive(RawMessage.self) { message, _ in received.append(message.typeName) }
            }
            try await withPeer(type, name: "vault", secret: secret, configure: collect) { _ in

                let (missing, withoutSecret) = try await runChirp(
                    ["send", type, "note", "{}", "--interface", "lo", "--timeout", "60"],
                    environment: ["CHIRP_SECRET": ""])
                #expect(missing == 4, "\(withoutSecret.transcript)")
                #expect(
                    withoutSecret.standardError.contains("vault requires a shared secret"),
                    "\(withoutSecret.transcript)")
                #expect(withoutSecret.standardError.contains("CHIRP_SECRET"), "\(withoutSecret.transcript)")

                let (mismatch, withWrongSecret) = try await runChirp(
                    ["ping", type, "--peer", "vault", "-c", "1", "--interface", "lo", "--timeout", "60"],
                    environment: ["CHIRP_SECRET": wrong])
                #expect(mismatch == 4, "\(withWrongSecret.transcript)")
                #expect(
                    withWrongSecret.standardError.contains("shared secret does not match"),
                    "\(withWrongSecret.transcript)")
                #expect(received.values.isEmpty)
                for output in [
                    withoutSecret.standardOutput, withoutSecret.standardError, withWrongSecret.standardOutput,
                    withWrongSecret.standardError
                ] {
                    #expect(!output.contains(secret))
                    #expect(!output.contains(wrong))
                }
            }
        }

        @Test(arguments: [["--secret", "VALUE"], ["--secret=VALUE"]])
        func aSecretOnTheCommandLineIsRefused(_ form: [String]) async throws {
            let secret = Self.randomSecret()
            let arguments =
                ["send", uniqueServiceType(), "note", "{}", "--interface", "lo"]
                + form.map { $0.replacingOccurrences(of: "VALUE", with: secret) }
            let (status, process) = try await runChirp(arguments)
            #expect(status == 64, "\(process.transcript)")
            #expect(process.standardError.contains("process list"), "\(process.transcript)")
            #expect(
                !process.standardOutput.contains(secret) && !process.standardError.contains(secret),
                "\(process.transcript)")

            let chat = try await startChat(
                uniqueServiceType(), name: "carol",
                arguments: form.map { $0.replacingOccurrences(of: "VALUE", with: secret) })
            chat.closeInput()
            #expect(try await chat.waitForExit() == 64, "\(chat.transcript)")
            #expect(chat.standardError.contains("process list"), "\(chat.transcript)")
            #expect(!chat.standardError.contains(secret), "\(chat.transcript)")
        }

        @Test func chatWithASecretTalksOnlyToPeersThatShareIt() async throws {
            let type = uniqueServiceType()
            let secret = Self.randomSecret()
            let file = try Self.secretFile(secret)
            defer { try? FileManager.default.removeItem(at: file) }
            let alice = try await startChat(type, name: "alice", environment: ["CHIRP_SECRET": secret])
            let bob = try await startChat(
                type, name: "bob", arguments: ["--secret-file", file.path], environment: ["CHIRP_SECRET": ""])
            let eve = try await startChat(type, name: "eve", environment: ["CHIRP_SECRET": ""])
            try await alice.waitForLine(containing: "* connected to bob")
            try await bob.waitForLine(containing: "* connected to alice")

            alice.write("meet at noon\n")
            try await bob.waitForLine(containing: "[alice] meet at noon")
            // eve sees why she cannot join, and gets nothing.
            #expect(
                await eventually(timeout: .seconds(20)) {
                    eve.standardError.contains("requires a shared secret")
                },
                "\(eve.transcript)")
            eve.write("let me in\n")
            bob.write("done\n")
            try await alice.waitForLine(containing: "[bob] done")
            for chat in [alice, bob, eve] { chat.closeInput() }
            for chat in [alice, bob, eve] { await chat.stop() }
            #expect(!eve.standardOutput.contains("meet at noon"), "\(eve.transcript)")
            #expect(!alice.standardOutput.contains("let me in") && !bob.standardOutput.contains("let me in"))
            #expect(
                !alice.standardOutput.contains("connected to eve") && !bob.standardOutput.contains("connected to eve"))
            for chat in [alice, bob, eve] {
                #expect(
                    !chat.standardOutput.contains(secret) && !chat.standardError.contains(secret), "\(chat.transcript)")
            }
        }

        @Test func helpOffersTheSecretFileButNeverTheCommandLineOption() async throws {
            for arguments in [
                ["send", "--help"], ["listen", "--help"], ["ping", "--help"], ["logs", "--help"], ["--help"]
            ] {
                let (status, process) = try await runChirp(
                    arguments, environment: ["CHIRP_SECRET": "never-in-help-1234"])
                #expect(status == 0, "\(process.transcript)")
                #expect(process.standardOutput.contains("CHIRP_SECRET"), "\(arguments): \(process.standardOutput)")
                #expect(!process.standardOutput.contains("--secret <"), "\(arguments)")
                #expect(!process.standardOutput.contains("never-in-help-1234"))
                if arguments != ["--help"] {
                    #expect(process.standardOutput.contains("--secret-file <PATH>"), "\(arguments)")
                }
            }
        }
    }
}

/// Values appended from any thread.
final class ReceivedTexts: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [String] = []

    func append(_ value: String) { lock.withLock { items.append(value) } }
    var values: [String] { lock.withLock { items } }
}
