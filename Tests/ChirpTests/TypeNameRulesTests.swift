import Foundation
import MetricsTestKit
import Testing

@testable import Chirp
@testable import ChirpSupport
@testable import ChirpWire

/// Wire names the wire cannot carry: a frame gives a type name two length bytes, and a receiver takes 1-1,024 bytes
/// of UTF-8 (Docs/Protocol.md). (A Swift `String` is always valid Unicode, so a name that is not UTF-8 cannot be
/// written here; the receiving side of that rule is FrameDecoderTests'.)
struct EmptyNamed: Codable, Sendable, ChirpMessage {
    static let chirpTypeName = ""
    var value = 1
}

struct OverlongNamed: Codable, Sendable, ChirpMessage {
    static let chirpTypeName = String(repeating: "n", count: 1025)
    var value = 1
}

/// The longest name that travels: the positive control.
struct LongestNamed: Codable, Sendable, ChirpMessage {
    static let chirpTypeName = String(repeating: "l", count: 1024)
    var value = 1
}

/// Checks that `body` throws a ``ChirpError`` of `code` whose message contains every one of `parts`.
func expectChirpError(
    _ code: ChirpError.Code, mentioning parts: [String], sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws -> Void
) {
    do {
        try body()
        Issue.record("no error thrown; expected \(code)", sourceLocation: sourceLocation)
    } catch let error as ChirpError {
        #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
        for part in parts {
            #expect(error.message.contains(part), "\(error.message)", sourceLocation: sourceLocation)
        }
    } catch {
        Issue.record("\(error) is not a ChirpError", sourceLocation: sourceLocation)
    }
}

@Suite(.timeLimit(.minutes(1))) struct TypeNameRulesTests {
    let transceiver = Transceiver(configuration: Configuration(serviceType: "test"))

    /// The error states the wire's limit from a copy of its own (ChirpSupport is below ChirpWire): the two agree.
    @Test func theLimitTheErrorStatesIsTheWiresLimit() {
        #expect(ChirpError.maxTypeNameLength == WireFormat.maxTypeNameLength)
        #expect(ChirpError.invalidTypeName("", swiftType: nil, problem: "it is empty").message.contains("1-1024 bytes"))
    }

    @Test func aNameTheWireCannotCarryIsRefusedWhereAHandlerOrAResponderIsRegistered() throws {
        let types: [(any (Codable & Sendable).Type, String)] = [
            (EmptyNamed.self, "EmptyNamed"), (OverlongNamed.self, "OverlongNamed")
        ]
        for (type, shown) in types {
            func receive<T: Codable & Sendable>(_ type: T.Type) throws { try transceiver.receive(type) { _, _ in } }
            func messages<T: Codable & Sendable>(_ type: T.Type) throws { _ = try transceiver.messages(of: type) }
            func respond<T: Codable & Sendable>(_ type: T.Type) throws {
                try transceiver.respond(to: type) { request, _ in request }
            }
            func reply<T: Codable & Sendable>(_ type: T.Type) throws {
                // The request's name is fine: the reply's is not, and would be written into every response frame.
                try transceiver.respond(to: Echo.self) { (_, _) throws -> T in throw CancellationError() }
            }
            expectChirpError(.invalidTypeName, mentioning: [shown]) { try receive(type) }
            expectChirpError(.invalidTypeName, mentioning: [shown]) { try messages(type) }
            expectChirpError(.invalidTypeName, mentioning: [shown]) { try respond(type) }
            expectChirpError(.invalidTypeName, mentioning: [shown]) { try reply(type) }
        }
        // The control: the longest name that travels is taken.
        try transceiver.receive(LongestNamed.self) { _, _ in }
        try transceiver.respond(to: LongestNamed.self) { request, _ in request }
    }

    @Test func theErrorSaysWhatTheRuleIsAndShowsALongNameShortened() {
        expectChirpError(.invalidTypeName, mentioning: ["empty", "1-1024 bytes", "chirpTypeName"]) {
            try transceiver.receive(EmptyNamed.self) { _, _ in }
        }
        do {
            try transceiver.receive(OverlongNamed.self) { _, _ in }
            Issue.record("no error")
        } catch let error as ChirpError {
            #expect(error.message.contains("1025 bytes"), "\(error.message)")
            #expect(error.message.utf8.count < 400, "the name is shortened: \(error.message)")
            #expect(error.messageType == OverlongNamed.chirpTypeName)
        } catch {
            Issue.record("\(error)")
        }
    }

    @Test func aRawMessageWithANameTheWireCannotCarryIsRefusedAsEveryOtherMessage() {
        let frame = { (name: String) in
            try PayloadCoding.frame(
                RawMessage(typeName: name, payload: Data("{}".utf8)), allocator: .init(), limit: 1 << 20)
        }
        expectChirpError(.invalidTypeName, mentioning: ["empty"]) { _ = try frame("") }
        expectChirpError(.invalidTypeName, mentioning: ["1025 bytes"]) {
            _ = try frame(String(repeating: "r", count: 1025))
        }
        #expect(throws: Never.self) { _ = try frame(String(repeating: "r", count: 1024)) }
    }
}

extension LiveTests {
    @Suite(.timeLimit(.minutes(2))) struct TypeNameRulesLiveTests {
        /// Before these checks, a message or request with such a name went out and the receiver dropped it as a
        /// protocol violation (a request then timed out): now it is refused at the call, and nothing is sent.
        @Test func aNameTheWireCannotCarryIsRefusedWhereAMessageOrARequestIsSent() async throws {
            let type = uniqueServiceType()
            let bobMetrics = TestMetrics()
            var bobConfiguration = testConfiguration("bob", serviceType: type)
            bobConfiguration.metricsFactory = bobMetrics
            let pair = Pair(
                alice: Transceiver(configuration: testConfiguration("alice", serviceType: type)),
                bob: Transceiver(configuration: bobConfiguration))
            let received = Collected<Int>()
            try pair.bob.receive(LongestNamed.self) { message, _ in received.append(message.value) }
            let (bobPeer, _) = try await pair.connect()
            try await withTeardown {
                for value in [EmptyNamed() as any Encodable & Sendable, OverlongNamed()] {
                    let shown = String(describing: Swift.type(of: value))
                    func sendNow<T: Encodable>(_ value: T) throws { try pair.alice.send(value, to: bobPeer) }
                    func sendToAll<T: Encodable>(_ value: T) throws { try pair.alice.send(value, to: .all) }
                    func request<T: Encodable>(_ value: T) async throws {
                        _ = try await pair.alice.request(value, to: bobPeer, as: Echo.self, timeout: .seconds(30))
                    }
                    func sendWaiting<T: Encodable>(_ value: T) async throws {
                        try await pair.alice.send(value, to: bobPeer)
                    }
                    for attempt in [
                        { try sendNow(value) }, { try sendToAll(value) }
                    ] as [() throws -> Void] {
                        #expect {
                            try attempt()
                        } throws: { error in
                            (error as? ChirpError)?.code == .invalidTypeName && "\(error)".contains(shown)
                        }
                    }
                    await #expect {
                        try await request(value)
                    } throws: { error in
                        (error as? ChirpError)?.code == .invalidTypeName && "\(error)".contains(shown)
                    }
                    await #expect {
                        try await sendWaiting(value)
                    } throws: { error in
                        (error as? ChirpError)?.code == .invalidTypeName && "\(error)".contains(shown)
                    }
                }
                // The control: the longest name that travels arrives; nothing bob would have refused came before it
                // (a frame is counted as refused when it is read, before the next one is handled).
                try await pair.alice.send(LongestNamed(value: 7), to: bobPeer)
                try await received.waitForCount(1)
                #expect(received.values == [7])
                #expect(try bobMetrics.expectCounter("chirp_frames_refused_total", [("service", type)]).totalValue == 0)
            } teardown: {
                await pair.stop()
            }
        }
    }
}
