import Chirp

// The message types of the tests' own transceivers.

/// A chat line as the chat example sends it.
struct ChatLine: Codable, Sendable, ChirpMessage {
    static let chirpTypeName = "chat.line"
    var text: String
}

/// A chat-like message for the closed-pipe test.
struct ChatText: Codable, Sendable, ChirpMessage {
    static let chirpTypeName = "chat.text"
    var text: String
}

/// The request and reply types of the test's own transceiver.
struct Question: Codable, Sendable, ChirpMessage {
    static let chirpTypeName = "test.question"
    var text: String
}

struct Answer: Codable, Sendable, ChirpMessage {
    static let chirpTypeName = "test.answer"
    var text: String
}

/// listr's request for its items.
struct ListItemsRequest: Codable, Sendable, ChirpMessage { static let chirpTypeName = "listr.item.list" }

/// A request the test's peer answers slowly, or never.
struct SlowQuestion: Codable, Sendable, ChirpMessage { static let chirpTypeName = "test.slow" }

/// A request whose reply is a ChirpCommands data reply.
struct DumpRequest: Codable, Sendable, ChirpMessage { static let chirpTypeName = "test.dump" }
