import Testing

@testable import Chirp

/// Two Swift types that chose one wire name, as two modules might.
enum FirstModule {
    struct Note: Codable, Sendable, ChirpMessage {
        static let chirpTypeName = "tests.note"
        var text: String
    }
}

enum SecondModule {
    struct Note: Codable, Sendable, ChirpMessage {
        static let chirpTypeName = "tests.note"
        var body: String
    }
}

/// One wire name, one Swift type: the messages of a name decode as one type, so a second type is refused where it is
/// registered (before, the clash showed only as decoding errors on the receiving side).
@Suite(.timeLimit(.minutes(1))) struct TypeNameConflictTests {
    let transceiver = Transceiver(configuration: Configuration(serviceType: "test"))

    @Test func twoSwiftTypesUnderOneWireNameAreRefusedNamingBoth() throws {
        try transceiver.receive(FirstModule.Note.self) { _, _ in }
        try transceiver.receive(FirstModule.Note.self) { _, _ in }  // the control: the same type again is fine
        let both = [
            "'tests.note'", String(reflecting: FirstModule.Note.self), String(reflecting: SecondModule.Note.self)
        ]
        expectChirpError(.typeNameConflict, mentioning: both) {
            try transceiver.receive(SecondModule.Note.self) { _, _ in }
        }
        expectChirpError(.typeNameConflict, mentioning: both) {
            _ = try transceiver.messages(of: SecondModule.Note.self)
        }
        expectChirpError(.typeNameConflict, mentioning: both) {
            try transceiver.respond(to: SecondModule.Note.self) { _, _ in Echo(text: "") }
        }
    }

    @Test func aWireNameIsFreeAgainOnceItsHandlersAreCancelled() throws {
        let first = try transceiver.receive(FirstModule.Note.self) { _, _ in }
        let second = try transceiver.receive(FirstModule.Note.self) { _, _ in }
        first.cancel()
        #expect(throws: ChirpError.self) { try transceiver.receive(SecondModule.Note.self) { _, _ in } }
        second.cancel()
        try transceiver.receive(SecondModule.Note.self) { _, _ in }
    }
}
