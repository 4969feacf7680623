import Foundation
import Testing

@testable import Chirp

extension LiveTests {
    /// The errors a user meets when a message or a reply is not what was expected say why, and what to do.
    @Suite(.timeLimit(.minutes(2))) struct ErrorAdviceTests {
        /// A reply that does not decode as the type the requester expects names both types.
        @Test func aReplyOfAnotherTypeNamesTheTypeExpectedAndTheTypeReceived() async throws {
            let pair = Pair()
            try pair.bob.respond(to: Echo.self) { request, _ in Echo(text: request.text) }
            try await withTeardown {
                let (bobPeer, _) = try await pair.connect()
                let echo = String(reflecting: Echo.self)
                let error = await #expect(throws: ChirpError.self) {
                    try await pair.alice.request(Echo(text: "hi"), to: bobPeer, as: Named.self)
                }
                #expect(error?.code == .decodingFailed && error?.messageType == echo)
                #expect(
                    error?.message.hasPrefix(
                        "the reply from bob to \(echo) is a \(echo), which does not decode as the type expected, "
                            + "\(String(reflecting: Named.self)) ('tests.named'): ") == true,
                    "\(String(describing: error))")
                // The control: the same reply as the type it is.
                #expect(try await pair.alice.request(Echo(text: "hi"), to: bobPeer, as: Echo.self).text == "hi")
            } teardown: {
                await pair.stop()
            }
        }

        /// A message with a `Data` property, which JSON writes as base64.
        struct Attachment: Codable, Sendable {
            var name: String
            var bytes: Data
        }

        /// A message too large because of the `Data` inside it says that JSON writes it as base64, and that a bare
        /// `Data` value travels as raw bytes.
        @Test func aMessageTooLargeBecauseOfDataInsideItSaysWhy() async throws {
            let type = uniqueServiceType()
            var aliceConfiguration = testConfiguration("alice", serviceType: type)
            aliceConfiguration.maximumMessageSize = 64 * 1024
            let pair = Pair(
                alice: Transceiver(configuration: aliceConfiguration),
                bob: Transceiver(configuration: testConfiguration("bob", serviceType: type)))
            let received = Collected<Int>()
            try pair.bob.receive(Data.self) { data, _ in received.append(data.count) }
            try pair.bob.respond(to: Attachment.self) { attachment, _ in attachment.name }
            try await withTeardown {
                let (bobPeer, _) = try await pair.connect()
                let bytes = Data(repeating: 7, count: 60 * 1024)  // 80 KiB as base64
                let attachment = Attachment(name: "photo", bytes: bytes)
                let errors = [
                    #expect(throws: ChirpError.self) { try pair.alice.send(attachment, to: bobPeer) },
                    await #expect(throws: ChirpError.self) { try await pair.alice.send(attachment, to: .all) },
                    await #expect(throws: ChirpError.self) {
                        try await pair.alice.request(attachment, to: bobPeer, as: String.self)
                    }
                ]
                for error in errors {
                    #expect(error?.code == .messageTooLarge, "\(String(describing: error))")
                    let message = error?.message ?? ""
                    #expect(message.contains("over maximumMessageSize"), "\(message)")
                    #expect(message.contains("JSON writes as base64"), "\(message)")
                    #expect(message.contains("a bare Data value travels as raw bytes"), "\(message)")
                }
                // Too large without Data: no word of it.
                let plain = #expect(throws: ChirpError.self) {
                    try pair.alice.send(Echo(text: String(repeating: "x", count: 70 * 1024)), to: bobPeer)
                }
                #expect(plain?.code == .messageTooLarge && plain?.message.contains("base64") == false)
                // The control: the same bytes as a bare Data value travel.
                try await pair.alice.send(bytes, to: bobPeer)
                try await received.waitForCount(1)
                #expect(received.values == [60 * 1024])
            } teardown: {
                await pair.stop()
            }
        }
    }
}
