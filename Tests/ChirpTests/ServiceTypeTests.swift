import Testing

@testable import Chirp

@Suite(.timeLimit(.minutes(5))) struct ServiceTypeTests {
    @Test(arguments: ["chat", "a", "listrctl", "my-app-2", "abcdefghijklmno", "_chat._tcp", "_chat"])
    func acceptsValidTypes(_ name: String) throws {
        let type = try ServiceType(name)
        #expect(!type.name.isEmpty && type.name.count <= 15)
        #expect(type.registrationType == "_\(type.name)._tcp")
    }

    @Test(arguments: ["", "abcdefghijklmnop", "123", "has space", "under_score", "-chat", "chat-", "a--b", "café"])
    func rejectsInvalidTypes(_ name: String) {
        #expect(throws: ChirpError.self) { try ServiceType(name) }
    }

    @Test func errorSaysWhatIsWrong() {
        do {
            _ = try ServiceType("abcdefghijklmnop")
            Issue.record("expected an error")
        } catch {
            #expect("\(error)".contains("16 characters"))
            #expect("\(error)".contains("at most 15"))
        }
    }
}
