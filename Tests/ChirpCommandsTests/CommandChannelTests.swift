import Chirp
import Foundation
import Logging
import Testing

@testable import ChirpCommands

/// Receiver and transmitter in one process, over the real avahi-daemon and TCP.
@Suite(.serialized, .timeLimit(.minutes(10))) struct CommandChannelTests {
    struct Echo: ChirpCommand {
        static let chirpTypeName = "test.echo"
        var text: String
    }
    struct Bytes: ChirpCommand {
        static let chirpTypeName = "test.bytes"
        var count: Int
    }
    struct Fail: ChirpCommand {
        static let chirpTypeName = "test.fail"
    }
    struct Unhandled: ChirpCommand {
        static let chirpTypeName = "test.unhandled"
    }
    struct Refusal: LocalizedError {
        var errorDescription: String? { "refused: the list is locked" }
    }

    static func configuration(_ service: String) -> Configuration {
        var configuration = Configuration(serviceType: service)
        configuration.interface = .loopback
        configuration.logger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
        return configuration
    }

    /// Runs `body` against an app serving the test commands; its replies are at most `limit` bytes.
    func withApp(limit: Int? = nil, _ body: (CommandTransmitter) async throws -> Void) async throws {
        let service = uniqueServiceType()
        var appConfiguration = Self.configuration(service)
        appConfiguration.peerName = "app"
        let transceiver = Transceiver(configuration: appConfiguration)
        let receiver = CommandReceiver(transceiver: transceiver, maximumResponseSize: limit)
        try receiver.handle(Echo.self) { command, sender in .text("\(command.text) (from \(sender.name))") }
        try receiver.handle(Bytes.self) { command, _ async in .data(Data(repeating: 0xAB, count: command.count)) }
        try receiver.handle(Fail.self) { _, _ async throws -> CommandResponse in throw Refusal() }
        try await transceiver.start()
        let transmitter = CommandTransmitter(configuration: Self.configuration(service), timeout: .seconds(20))
        try await withTeardown {
            try await body(transmitter)
        } teardown: {
            await transceiver.shutdown()
        }
    }

    @Test func syncAndAsyncHandlersAnswerTheAskingPeer() async throws {
        try await withApp { transmitter in
            let reply = try await transmitter.send(Echo(text: "hello"))
            #expect(reply.app.name == "app")
            guard case .text(let text) = reply.response else {
                Issue.record("\(reply.response)")
                return
            }
            #expect(text.hasPrefix("hello (from "))
            // A megabyte travels as raw bytes.
            let bytes = try await transmitter.send(Bytes(count: 1_000_000), to: "app")
            #expect(bytes.response == .data(Data(repeating: 0xAB, count: 1_000_000)))
        }
    }

    @Test func throwingHandlerBecomesAFailureAndTheAppKeepsServing() async throws {
        try await withApp { transmitter in
            #expect(try await transmitter.send(Fail()).response == .failure("refused: the list is locked"))
            let unhandled = try await transmitter.send(Unhandled())
            guard case .failure(let message) = unhandled.response else {
                Issue.record("\(unhandled.response)")
                return
            }
            #expect(message.contains("does not handle test.unhandled"))
            #expect(try await transmitter.send(Echo(text: "still here")).response.isSuccess)
        }
    }

    @Test func replyOverTheLimitBecomesAFailure() async throws {
        try await withApp(limit: 1000) { transmitter in
            #expect(try await transmitter.send(Bytes(count: 999)).response.isSuccess)
            let reply = try await transmitter.send(Bytes(count: 5000))
            guard case .failure(let message) = reply.response else {
                Issue.record("\(reply.response)")
                return
            }
            #expect(message.contains("over the limit of 1000 bytes"))
        }
    }

    @Test func allCollectsEveryAppsReply() async throws {
        try await withApp { transmitter in
            let outcomes = try await transmitter.sendToAll(Echo(text: "all"))
            #expect(outcomes.count == 1)
            #expect(outcomes.first?.exitCode == .success)
            #expect(outcomes.first?.label.hasPrefix("app on ") == true)
        }
    }

    @Test func openAccessIsWarnedAbout() {
        var configuration = Configuration(serviceType: "x")
        #expect(CommandReceiver.openAccessWarning(for: configuration)?.contains("no shared secret") == true)
        configuration.interface = .loopback
        #expect(CommandReceiver.openAccessWarning(for: configuration) == nil)
    }
}
