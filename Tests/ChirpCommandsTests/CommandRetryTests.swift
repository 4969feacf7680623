import ChirpTestSupport
import Foundation
import Testing

@testable import Chirp
@testable import ChirpCommands

/// A command whose connection drops after the app received it, over the real avahi-daemon and TCP: an idempotent one
/// is sent again on the CLI's next connection, another fails saying the app may have run it.
@Suite(.serialized, .timeLimit(.minutes(5))) struct CommandRetryTests {
    struct Tally: ChirpCommand, IdempotentRequest {
        static let chirpTypeName = "test.tally"
    }
    struct Append: ChirpCommand {
        static let chirpTypeName = "test.append"
    }

    /// Runs `body` against an app whose handlers close the connection a command came on the first time they run
    /// (their reply is then lost), and answer with the number of runs after.
    func withDroppingApp(_ body: (CommandTransmitter, Collected<String>) async throws -> Void) async throws {
        let service = uniqueServiceType()
        var appConfiguration = CommandChannelTests.configuration(service)
        appConfiguration.peerName = "app"
        let transceiver = Transceiver(configuration: appConfiguration)
        let receiver = CommandReceiver(transceiver: transceiver)
        let runs = Collected<String>()
        @Sendable func handle(_ name: String, sender: Peer) async throws -> CommandResponse {
            runs.append(name)
            if runs.values.count == 1, let connection = transceiver.currentEngine?.connection(to: sender.id) {
                connection.close(goodbye: nil)
                try await connection.channel.closeFuture.get()
            }
            return .text("\(runs.values.count) runs")
        }
        try receiver.handle(Tally.self) { _, sender async throws in try await handle("tally", sender: sender) }
        try receiver.handle(Append.self) { _, sender async throws in try await handle("append", sender: sender) }
        try await transceiver.start()
        let transmitter = CommandTransmitter(
            configuration: CommandChannelTests.configuration(service), timeout: .seconds(20))
        try await withTeardown {
            try await body(transmitter, runs)
        } teardown: {
            await transceiver.shutdown()
        }
    }

    @Test func anIdempotentCommandIsSentAgainWhenTheConnectionDropsBeforeTheReply() async throws {
        try await withDroppingApp { transmitter, runs in
            let reply = try await transmitter.send(Tally())
            guard case .text(let text) = reply.response else {
                Issue.record("\(reply.response)")
                return
            }
            #expect(text == "2 runs")
            #expect(runs.values == ["tally", "tally"])
        }
    }

    @Test func anotherCommandFailsSayingTheAppMayHaveRunIt() async throws {
        try await withDroppingApp { transmitter, runs in
            let error = await #expect(throws: CommandError.self) { _ = try await transmitter.send(Append()) }
            #expect(error?.code == .connectionLost)
            #expect(
                error?.detail
                    == "the request had been sent, so the peer may have run it; it was not sent again, since test.append "
                    + "is not an IdempotentRequest")
            #expect(error?.message.hasPrefix("lost the connection to app on ") == true, "\(String(describing: error))")
            #expect(runs.values == ["append"])
        }
    }
}
