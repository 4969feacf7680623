import Testing

@testable import Chirp

/// A message nobody handles is warned about once per type and peer, with the fix when a handler for a type of the
/// same short name exists (two programs that each declared `ChatLine` without `ChirpMessage`).
@Suite(.timeLimit(.minutes(5))) struct UnhandledTypeWarningsTests {
    let alice = Peer(id: "8C0E7F0B-3F0B-4C1A-9D0E-2A61F3E0B7A4", name: "alice")
    let bob = Peer(id: "11111111-2222", name: "bob")

    private func warn(_ warnings: inout UnhandledTypeWarnings, typeName: String, peerID: String) -> Bool {
        warnings.shouldWarn(typeName: typeName, peerID: peerID)
    }

    @Test func warnsOncePerTypeAndPeer() {
        var warnings = UnhandledTypeWarnings()
        #expect(warn(&warnings, typeName: "chat.ChatLine", peerID: alice.id))
        #expect(!warn(&warnings, typeName: "chat.ChatLine", peerID: alice.id))
        #expect(warn(&warnings, typeName: "chat.ChatLine", peerID: bob.id))
        #expect(warn(&warnings, typeName: "chat.Other", peerID: alice.id))
    }

    @Test func remembersABoundedNumberOfPairs() {
        var warnings = UnhandledTypeWarnings()
        for index in 0..<UnhandledTypeWarnings.limit {
            #expect(warn(&warnings, typeName: "t\(index)", peerID: alice.id))
        }
        #expect(warnings.isFull)
        #expect(!warn(&warnings, typeName: "one-more", peerID: alice.id))
    }

    @Test func findsRegisteredTypesWithTheSameShortName() {
        let registered = ["chatbot.ChatLine", "chat.line", "Other.ChatLines", "ChatLine"]
        #expect(
            UnhandledTypeWarnings.lookalikes(of: "chat.ChatLine", among: registered) == ["ChatLine", "chatbot.ChatLine"]
        )
        #expect(UnhandledTypeWarnings.lookalikes(of: "chat.Unknown", among: registered).isEmpty)
    }

    @Test func theMessageNamesTheTypesAndTheFix() {
        let text = UnhandledTypeWarnings.message(
            typeName: "chat.ChatLine", peer: alice, lookalikes: ["chatbot.ChatLine"], isLast: false)
        #expect(text.contains("'chat.ChatLine' from alice (8C0E7F0B)"))
        #expect(text.contains("'chatbot.ChatLine'"))
        #expect(text.contains("static let chirpTypeName = \"ChatLine\""))
        let plain = UnhandledTypeWarnings.message(typeName: "x.Y", peer: alice, lookalikes: [], isLast: true)
        #expect(plain.contains("receive(_:handler:)"))
        #expect(plain.contains("No further unhandled types"))
    }

    @Test func aForgedTypeNameCannotStartANewLine() {
        let text = UnhandledTypeWarnings.message(
            typeName: "x\n2026-11-24T10:00:00 critical receiver: FORGED", peer: alice, lookalikes: [], isLast: false)
        #expect(!text.contains("\n"))
        #expect(text.contains("x\\n2026"))  // the positive control: the forged text is there, escaped
    }
}
