import Chirp
import Foundation
import MetricsTestKit
import Testing

/// The README's `ChatLine` declared in two programs without `ChirpMessage`: each sends it under its own module's
/// name, and neither receives the other's lines. The receiver says so loudly, once, with the fix.
struct ChatLine: Codable, Sendable { var text: String }

extension LiveTests {
    @Suite struct UnhandledTypeTests {
        /// Alice connected to bob, whose log goes to the returned capture; `configure` sets bob up before he starts.
        static func connectedPair(
            configure: (Transceiver) throws -> Void = { _ in }
        ) async throws -> (alice: Transceiver, bob: Transceiver, bobPeer: Peer, logs: LogCapture) {
            let type = uniqueServiceType()
            let logs = LogCapture()
            var bobConfiguration = testConfiguration("bob", serviceType: type)
            bobConfiguration.logger = logs.logger("bob")
            let alice = Transceiver(configuration: testConfiguration("alice", serviceType: type))
            let bob = Transceiver(configuration: bobConfiguration)
            try configure(bob)
            let (bobPeer, _) = try await Pair(alice: alice, bob: bob).connect()
            return (alice, bob, bobPeer, logs)
        }

        @Test func aTypeWithTheSameShortNameFromAnotherModuleIsWarnedAboutOnceWithTheFix() async throws {
            let received = Collected<String>()
            let (alice, bob, bobPeer, logs) = try await Self.connectedPair { bob in
                // Travels as ChirpTests.ChatLine.
                try bob.receive(ChatLine.self) { line, _ in received.append(line.text) }
            }

            // Alice's program declared its own ChatLine: it travels as "OtherApp.ChatLine". Sent twice: one warning.
            let foreign = RawMessage(typeName: "OtherApp.ChatLine", payload: Data(#"{"text":"lost"}"#.utf8))
            try await alice.send(foreign, to: bobPeer)
            try await alice.send(foreign, to: bobPeer)
            // The positive control for "handled messages are not warned about": a real ChatLine after them arrives.
            try await alice.send(ChatLine(text: "arrives"), to: bobPeer)
            try await received.waitForCount(1)
            try await logs.waitForLine(containing: "no handler for messages of type 'OtherApp.ChatLine' from alice")

            let warnings = logs.lines.filter { $0.contains("no handler for messages of type") }
            #expect(warnings.count == 1, "one warning per type and peer: \(warnings)")
            let warning = try #require(warnings.first)
            #expect(warning.hasPrefix("warning"))
            #expect(warning.contains("'ChirpTests.ChatLine'"))
            #expect(warning.contains("chirpTypeName"))
            #expect(received.values == ["arrives"])
            await alice.shutdown()
            await bob.shutdown()
        }

        @Test func aForgedTypeNameCannotForgeALogLine() async throws {
            let (alice, bob, bobPeer, logs) = try await Self.connectedPair()

            // What `chirp send TYPE $'x\n... critical receiver: FORGED LINE' '{}'` sends.
            let forged = "x\n2026-11-24T10:00:00+0000 critical receiver: FORGED LINE \u{1B}]0;TITLE\u{07}"
            try await alice.send(RawMessage(typeName: forged, payload: Data("{}".utf8)), to: bobPeer)
            // The positive control: the warning about it is logged, with the forged text in it, escaped.
            try await logs.waitForLine(
                containing: #"x\n2026-11-24T10:00:00+0000 critical receiver: FORGED LINE \u{1B}]0;TITLE\u{7}"#)
            #expect(!logs.text.contains("\ncritical receiver"))
            #expect(!logs.lines.contains { $0.contains("\n") || $0.contains("\u{1B}") })
            await alice.shutdown()
            await bob.shutdown()
        }

        /// The quick start has no logger: a message of a type nobody handles is an event (once per type and peer,
        /// as the warning) and a counter (every such message), so an app sees it without one.
        @Test func aMessageNobodyHandlesIsAnEventAndACounterWithoutALogger() async throws {
            let type = uniqueServiceType()
            let metrics = TestMetrics()
            var bobConfiguration = Configuration(serviceType: type)  // no logger: the default discards everything
            bobConfiguration.peerName = "bob"
            bobConfiguration.interface = .loopback
            bobConfiguration.metricsFactory = metrics
            let alice = Transceiver(configuration: testConfiguration("alice", serviceType: type))
            let bob = Transceiver(configuration: bobConfiguration)
            let bobEvents = EventRecorder(bob)
            let received = Collected<String>()
            try bob.receive(ChatLine.self) { line, _ in received.append(line.text) }
            try await alice.start()
            try await bob.start()
            let bobPeer = try #require(try await alice.waitForConnectedPeers(1).first)
            _ = try await bob.waitForConnectedPeers(1)

            let unknown = RawMessage(typeName: "nobody.handles", payload: Data("{}".utf8))
            try await alice.send(unknown, to: bobPeer)
            try await alice.send(unknown, to: bobPeer)
            try await alice.send(ChatLine(text: "handled"), to: bobPeer)  // the positive control, after them
            try await received.waitForCount(1)
            try await bobEvents.waitFor("the unhandled-message event") { event in
                if case .unhandledMessage(let typeName, let sender) = event {
                    typeName == "nobody.handles" && sender.name == "alice"
                } else {
                    false
                }
            }
            // Counted when handled, before the message after them: both already.
            #expect(try metrics.expectCounter("chirp_messages_unhandled_total", [("service", type)]).totalValue == 2)
            await alice.shutdown()
            await bob.shutdown()
            // Every event up to `stopped` is recorded: one event for the two messages.
            try await bobEvents.waitFor("bob's stopped event") { if case .stopped = $0 { true } else { false } }
            let unhandled = bobEvents.events.filter { if case .unhandledMessage = $0 { true } else { false } }
            #expect(unhandled.count == 1, "\(unhandled)")
            #expect(received.values == ["handled"])
        }
    }
}
