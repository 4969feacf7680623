import Dispatch
import Foundation
import Testing

@testable import Chirp

/// A message larger than a heartbeat, so that what it costs to read shows.
struct Greeting: Codable, Sendable { var text: String }

extension LiveTests {
    @Suite(.timeLimit(.minutes(2))) struct EventOrderTests {
        /// An app that builds its table of peers from the events must know a peer before its first message. Bob
        /// sends the moment he is connected; alice's events are held up on purpose (her event queue waits until she
        /// has read bob's message and answered a ping sent after it), so without the hold on her connection, bob's
        /// message would reach her handler before she was told he connected.
        @Test func aPeersFirstMessageReachesTheHandlersAfterItsPeerConnectedEvent() async throws {
            let type = uniqueServiceType()
            let alice = Transceiver(configuration: testConfiguration("alice", serviceType: type))
            let bob = Transceiver(configuration: testConfiguration("bob", serviceType: type))
            let seen = Collected<String>()  // what alice's app saw, in order
            try alice.receive(Greeting.self) { _, sender in seen.append("message from \(sender.name)") }
            alice.availablePeersDidChange = { peers in
                if peers.contains(where: { $0.name == "bob" && $0.isConnected }) { seen.append("bob connected") }
            }

            try await alice.start()
            // Alice's events wait behind this until bob's message was read by alice (bob's ping after it answered).
            let bobHasSent = DispatchSemaphore(value: 0)
            alice.hub.afterPendingEvents { _ = bobHasSent.wait(timeout: .now() + 20) }
            try await withTeardown {
                try await bob.start()
                let alicePeer = try #require(try await bob.waitForConnectedPeers(1).first)
                try await bob.send(Greeting(text: String(repeating: "hi ", count: 1000)), to: alicePeer)
                _ = try await bob.ping(alicePeer)  // answered once alice read what came before it
                bobHasSent.signal()

                try await withTimeout(.seconds(20), "bob's message and his connection (seen: \(seen.values))") {
                    while !(seen.values.contains("bob connected") && seen.values.contains("message from bob")) {
                        try await Task.sleep(for: .milliseconds(10))
                    }
                }
                let connected = try #require(seen.values.firstIndex(of: "bob connected"))
                let message = try #require(seen.values.firstIndex(of: "message from bob"))
                #expect(connected < message, "\(seen.values)")
            } teardown: {
                bobHasSent.signal()
                await alice.shutdown()
                await bob.shutdown()
            }
        }

        /// A peer that sends and leaves before the app was told it connected: the app still sees it connect, then its
        /// message, then it go. Bob sends, says goodbye and closes while alice's events are held up (as above); her
        /// connection closes with his message unread by her handlers, and it waits for her events all the same.
        @Test func aPeerThatSendsAndLeavesBeforeItsConnectedEventIsSeenConnectedThenItsMessageThenGone() async throws {
            let type = uniqueServiceType()
            let alice = Transceiver(configuration: testConfiguration("alice", serviceType: type))
            let bob = Transceiver(configuration: testConfiguration("bob", serviceType: type))
            let seen = Collected<String>()
            try alice.receive(Greeting.self) { _, sender in seen.append("message from \(sender.name)") }
            alice.availablePeersDidChange = { peers in
                let isConnected = peers.contains { $0.name == "bob" && $0.isConnected }
                let wasConnected = seen.values.last(where: { $0.hasPrefix("bob ") }) == "bob connected"
                if isConnected != wasConnected { seen.append(isConnected ? "bob connected" : "bob gone") }
            }

            try await alice.start()
            let bobHasLeft = DispatchSemaphore(value: 0)
            alice.hub.afterPendingEvents { _ = bobHasLeft.wait(timeout: .now() + 20) }
            try await withTeardown {
                try await bob.start()
                let alicePeer = try #require(try await bob.waitForConnectedPeers(1).first)
                try await bob.send(Greeting(text: "bye"), to: alicePeer)
                await bob.shutdown()  // his goodbye goes after the message, then he closes
                let engine = try #require(alice.currentEngine)
                try await withTimeout(.seconds(20), "alice's connections with bob closed") {
                    while engine.openChannelCount > 0 { try await Task.sleep(for: .milliseconds(10)) }
                }
                bobHasLeft.signal()

                try await withTimeout(.seconds(20), "bob's connection, message and end (seen: \(seen.values))") {
                    while !seen.values.contains("bob gone") { try await Task.sleep(for: .milliseconds(10)) }
                }
                #expect(seen.values == ["bob connected", "message from bob", "bob gone"])
            } teardown: {
                bobHasLeft.signal()
                await alice.shutdown()
                await bob.shutdown()
            }
        }
    }
}
