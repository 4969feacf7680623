import Foundation
import Testing

@testable import ChirpCommands

@Suite(.timeLimit(.minutes(5))) struct CommandResponseTests {
    @Test(arguments: [
        CommandResponse.text("hello"), .text(""), .text("ünïcødé ✓\nline two"),
        .data(Data()), .data(Data(0...255)), .data(Data(repeating: 0, count: 100_000)),
        .failure("no item #7"), .failure("")
    ])
    func roundTrips(_ response: CommandResponse) throws {
        #expect(try CommandResponse(encoded: response.encoded()) == response)
    }

    @Test func layoutIsAKindByteThenTheBody() {
        #expect(CommandResponse.text("hi").encoded() == Data([0x74, 0x68, 0x69]))
        #expect(CommandResponse.data(Data([0, 1])).encoded() == Data([0x64, 0, 1]))
        #expect(CommandResponse.failure("no").encoded() == Data([0x66, 0x6E, 0x6F]))
    }

    @Test func rejectsBadReplies() {
        #expect(throws: CommandResponseDecodingError.empty) { try CommandResponse(encoded: Data()) }
        #expect(throws: CommandResponseDecodingError.unknownKind(0x7A)) {
            try CommandResponse(encoded: Data([0x7A, 1]))
        }
        #expect(throws: CommandResponseDecodingError.invalidUTF8) {
            try CommandResponse(encoded: Data([0x74, 0xFF, 0xFE]))
        }
        // A refusal for lack of a permission is not a response: read apart, before decoding.
        let denied = CommandResponse.denied("needs write")
        #expect(CommandResponse.deniedMessage(in: denied) == "needs write")
        #expect(CommandResponse.deniedMessage(in: CommandResponse.failure("needs write").encoded()) == nil)
        #expect(throws: CommandResponseDecodingError.unknownKind(0x6E)) { try CommandResponse(encoded: denied) }
    }

    struct Readable: LocalizedError { var errorDescription: String? { "the disk is full" } }
    enum Plain: Error, CustomStringConvertible {
        case gone
        var description: String { "it is gone" }
    }

    @Test func failureCarriesTheErrorsMessage() {
        #expect(CommandResponse.failure(Readable()) == .failure("the disk is full"))
        #expect(CommandResponse.failure(Plain.gone) == .failure("it is gone"))
        #expect(!CommandResponse.failure("x").isSuccess)
        #expect(CommandResponse.text("x").isSuccess && CommandResponse.data(Data()).isSuccess)
    }

    @Test func errorsMapToTheDocumentedExitCodes() {
        #expect(CommandExitCode.allCases.map(\.rawValue) == [0, 1, 3, 4, 5, 6, 7, 69])
        #expect(CommandError.noApp(service: "s", peer: nil, seconds: 1, detail: nil).exitCode == .noApp)
        #expect(CommandError.severalApps(service: "s", apps: ["a", "b"]).exitCode == .severalApps)
        #expect(CommandError.connectionLost(app: "a").exitCode == .connectionLost)
        #expect(CommandError.noReply(app: "a", seconds: 1).exitCode == .connectionLost)
        #expect(CommandError.local("x").exitCode == .appFailure)
        #expect(CommandError.refused(service: "s", reasons: ["r"]).exitCode == .refused)
        #expect(CommandError.ambiguousPeer(service: "s", peer: "a", apps: ["a (1)", "a (2)"]).exitCode == .severalApps)
        #expect(CommandError.noDaemon(detail: "avahi_client_new failed: x").exitCode == .noDaemon)
        #expect(CommandError.notPermitted(app: "a", reason: "r").exitCode == .notPermitted)
        for code in CommandExitCode.allCases {
            #expect(CommandExitCode.helpText.contains("\n  \(code.rawValue) "), "\(code.rawValue)")
        }
    }
}
