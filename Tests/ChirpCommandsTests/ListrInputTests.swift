import Chirp
import ChirpCommands
import Foundation
import ListrCommands
import Logging
import Testing

/// What listr accepts, from listrctl or from any other peer: titles on one line, commands with every field.
@Suite(.serialized, .timeLimit(.minutes(5))) struct ListrInputTests {
    /// A transmitter on the fixture's service, for commands listrctl would never send.
    static func transmitter(_ fixture: ListrFixture) -> CommandTransmitter {
        var configuration = Configuration(serviceType: fixture.service)
        configuration.interface = .loopback
        configuration.logger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
        return CommandTransmitter(configuration: configuration, timeout: .seconds(15))
    }

    /// `listr.item.add` without its title, as an older or foreign CLI could send it.
    struct AddWithoutTitle: ChirpCommand {
        static let chirpTypeName = "listr.item.add"
    }

    /// `listr.item.done` with an id that is not a number.
    struct DoneWithTextID: ChirpCommand {
        static let chirpTypeName = "listr.item.done"
        var id: String
    }

    @Test(arguments: [
        (["   "], "listrctl: error: TITLE: a title cannot be only spaces"),
        (["", " "], "listrctl: error: TITLE: a title cannot be only spaces"),
        (["buy\nmilk"], "listrctl: error: TITLE: a title is one line of text: it cannot contain a line break"),
        (["tab\there"], "listrctl: error: TITLE: a title is one line of text: it cannot contain a tab")
    ])
    func listrctlRefusesATitleThatIsNotOneLineOfText(words: [String], expected: String) async throws {
        try await ListrFixture.run { fixture in
            let result = try await fixture.ctl(["item", "add"] + words)
            #expect(result.status == 64, "\(result)")
            #expect(result.stderr.hasPrefix(expected), "\(result)")
        }
    }

    @Test func theAppRefusesSuchTitlesWhoeverSendsThem() async throws {
        try await ListrFixture.run { fixture in
            _ = try await fixture.startApp("alpha")
            let transmitter = Self.transmitter(fixture)
            for (title, expected) in [
                ("  \t ", "a title cannot be only spaces"), ("two\nlines", "it cannot contain a line break"),
                ("\u{1B}[31mred", "it cannot contain a control character")
            ] {
                let reply = try await transmitter.send(AddItem(title: title))
                guard case .failure(let message) = reply.response else {
                    Issue.record("\(title): expected a failure, got \(reply.response)")
                    continue
                }
                #expect(message.contains(expected), "\(message)")
            }
            let list = try await fixture.ctl(["item", "list"])
            #expect(list.lines == ["no items"], "nothing was added: \(list)")
        }
    }

    @Test func aTitleWithALineBreakInAStoreFileIsListedOnOneLine() async throws {
        try await ListrFixture.run { fixture in
            // A store edited by hand: listr loads it as it is, and shows the line break escaped.
            let store = StoreFile(
                nextID: 3, items: [TodoItem(id: 1, title: "first\nsecond"), TodoItem(id: 2, title: "x")])
            try store.encoded().write(to: URL(fileURLWithPath: fixture.path("alpha.json")))
            _ = try await fixture.startApp("alpha")
            let list = try await fixture.ctl(["item", "list"])
            #expect(list.status == 0, "\(list)")
            #expect(list.lines == [#"#1 [ ] first\nsecond"#, "#2 [ ] x"], "\(list)")
        }
    }

    @Test func aCommandWithAMissingOrMistypedFieldIsAnsweredInWords() async throws {
        try await ListrFixture.run { fixture in
            _ = try await fixture.startApp("alpha")
            let transmitter = Self.transmitter(fixture)

            let missing = try await transmitter.send(AddWithoutTitle())
            guard case .failure(let message) = missing.response else {
                Issue.record("expected a failure, got \(missing.response)")
                return
            }
            #expect(
                message.contains("the listr.item.add command could not be read: missing field 'title'"), "\(message)")
            #expect(!message.contains("DecodingError") && !message.contains("Debug description"), "\(message)")

            let mistyped = try await transmitter.send(DoneWithTextID(id: "one"))
            guard case .failure(let text) = mistyped.response else {
                Issue.record("expected a failure, got \(mistyped.response)")
                return
            }
            #expect(text.contains("wrong type at id: expected an integer"), "\(text)")
            #expect(!text.contains("DecodingError") && !text.contains("Debug description"), "\(text)")

            // The app keeps serving.
            let added = try await fixture.ctl(["item", "add", "still here"])
            #expect(added.lines == ["added #1 [ ] still here"], "\(added)")
        }
    }
}
