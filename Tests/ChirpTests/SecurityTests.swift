import Chirp
import ChirpDiscovery
import Foundation
import MetricsTestKit
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

/// A message whose text is easy to look for in captured traffic.
struct Marker: Codable, Sendable, ChirpMessage {
    static let chirpTypeName = "tests.marker"
    var text: String
}

/// Shared secrets, the accept policy and handshake limits, against real transceivers, the real avahi-daemon and real
/// TCP on loopback.
extension LiveTests {
    @Suite struct SecurityTests {
        // MARK: - The right secret

        @Test func peersWithTheSameSecretConnectAndExchangeMessagesAndRequests() async throws {
            let type = uniqueServiceType()
            let secret = randomSecret()
            let logs = LogCapture()
            let alice = try secureTransceiver("alice", serviceType: type, secret: secret, capture: logs)
            let bob = try secureTransceiver("bob", serviceType: type, secret: secret, capture: logs)
            let aliceEvents = EventRecorder(alice)
            let received = Collected<String>()
            try alice.receive(Marker.self) { marker in received.append(marker.text) }
            try alice.respond(to: Echo.self) { echo, _ in Echo(text: "echo: \(echo.text)") }
            let (_, alicePeer) = try await Pair(alice: alice, bob: bob).connect()

            for index in 0..<50 { try await bob.send(Marker(text: "message \(index)"), to: alicePeer) }
            let reply = try await bob.request(Echo(text: "over TLS"), to: alicePeer, as: Echo.self)
            try await received.waitForCount(50)
            #expect(received.values == (0..<50).map { "message \($0)" })
            #expect(reply.text == "echo: over TLS")
            #expect(refusals(in: aliceEvents.events).isEmpty)

            // The advertisement says a secret is required, and carries nothing derived from it.
            let browser = try ServiceBrowser(serviceType: type, interface: .loopback)
            let instance = try await withTimeout(.seconds(20), "alice's advertisement") { () -> ServiceInstance in
                for await event in browser.events() {
                    if case .found(let instance) = event, instance.name == "alice" { return instance }
                }
                throw TimeoutError(what: "alice's advertisement", timeout: .seconds(20))
            }
            #expect(instance.requiresSecret)
            #expect(Set(instance.txt.keys) == ["id", "name", "pv", "sec"])
            #expect(instance.txt["sec"] == "1")

            await bob.shutdown()
            await alice.shutdown()
            #expect(!logs.text.contains(secret))
            #expect(!eventTexts(aliceEvents.events).contains(secret))
        }

        @Test func aSecretIsNeverShownInDescriptions() throws {
            let secret = randomSecret()
            let shared = try SharedSecret(secret)
            var configuration = Configuration(serviceType: "tsecret")
            configuration.security = .sharedSecret(shared)
            for text in ["\(shared)", String(reflecting: shared), "\(configuration.security)", "\(configuration)"] {
                #expect(!text.contains(secret), "\(text)")
            }
            #expect(throws: ChirpError.self) { try SharedSecret("short") }
            let error = #expect(throws: ChirpError.self) { try SharedSecret("1234567") }
            #expect(!String(describing: error).contains("1234567"))
        }

        // MARK: - Wrong, missing, no TLS

        @Test func aWrongSecretDeliversNothingAndBothSidesSayWhy() async throws {
            let type = uniqueServiceType()
            let secret = randomSecret()
            let wrong = randomSecret()
            let appLogs = LogCapture()
            let intruderLogs = LogCapture()
            let app = try secureTransceiver("app", serviceType: type, secret: secret, capture: appLogs)
            let intruder = try secureTransceiver("intruder", serviceType: type, secret: wrong, capture: intruderLogs)
            let friend = try secureTransceiver("friend", serviceType: type, secret: secret)
            let appEvents = EventRecorder(app)
            let intruderEvents = EventRecorder(intruder)
            let received = Collected<String>()
            try app.receive(Marker.self) { marker, sender in received.append("\(sender.name): \(marker.text)") }
            try await app.start()
            try await intruder.start()

            let mismatch = "shared secret does not match"
            try await appEvents.waitFor("the app to refuse the intruder") { event in
                if case .connectionRefused(_, let reason) = event { return reason.contains(mismatch) }
                return false
            }
            try await intruderEvents.waitFor("the intruder to be refused") { event in
                if case .connectionRefused(_, let reason) = event { return reason.contains(mismatch) }
                return false
            }
            try await appLogs.waitForLine(containing: mismatch)
            try await intruderLogs.waitForLine(containing: mismatch)
            #expect(intruder.connectedPeers.isEmpty)
            try await intruder.send(Marker(text: "injected"), to: .all)  // goes nowhere: no connection

            // A peer with the right secret is served as usual meanwhile.
            try await friend.start()
            let appPeer = try #require(try await friend.waitForConnectedPeers(1).first)
            try await friend.send(Marker(text: "hello"), to: appPeer)
            try await received.waitForCount(1)
            #expect(received.values == ["friend: hello"])
            #expect(app.connectedPeers.map(\.name) == ["friend"])
            #expect(intruder.connectedPeers.isEmpty)

            for transceiver in [friend, intruder, app] { await transceiver.shutdown() }
            for text in [
                appLogs.text, intruderLogs.text, eventTexts(appEvents.events), eventTexts(intruderEvents.events)
            ] {
                #expect(!text.contains(secret))
                #expect(!text.contains(wrong))
            }
        }

        @Test func aMissingSecretIsExplainedOnBothSidesAndNothingIsDialed() async throws {
            let type = uniqueServiceType()
            let secret = randomSecret()
            let appLogs = LogCapture()
            let openLogs = LogCapture()
            let app = try secureTransceiver("app", serviceType: type, secret: secret, capture: appLogs)
            let open = try secureTransceiver("open", serviceType: type, secret: nil, capture: openLogs)
            let appEvents = EventRecorder(app)
            let openEvents = EventRecorder(open)
            let received = Collected<String>()
            try app.receive(Marker.self) { marker in received.append(marker.text) }
            try await app.start()
            try await open.start()

            // From the TXT record alone: the open peer knows it needs a secret, the app knows the peer has none.
            try await openEvents.waitFor("the open peer to learn that the app requires a secret") { event in
                if case .connectionRefused(let peer, let reason) = event {
                    return peer == "app" && reason.contains("requires a shared secret")
                        && reason.contains("CHIRP_SECRET")
                }
                return false
            }
            try await appEvents.waitFor("the app to note that the peer has no secret") { event in
                if case .connectionRefused(let peer, let reason) = event {
                    return peer == "open" && reason.contains("does not use a shared secret")
                }
                return false
            }
            try await openLogs.waitForLine(containing: "requires a shared secret")
            try await appLogs.waitForLine(containing: "does not use a shared secret")
            #expect(open.connectedPeers.isEmpty)
            #expect(app.connectedPeers.isEmpty)
            #expect(open.availablePeers.first?.isConnected == false)
            #expect(throws: ChirpError.self) {
                try open.send(Marker(text: "injected"), to: Peer(id: app.configuration.peerID, name: "app"))
            }

            // Dialing the port directly, without discovery, fails too, and the app says why.
            let appPort = try #require(app.port)
            await #expect(throws: (any Error).self) { _ = try await open.connect(host: "127.0.0.1", port: appPort) }
            try await appEvents.waitFor("the app to refuse the plaintext connection") { event in
                if case .connectionRefused(_, let reason) = event {
                    return reason.contains("shared secret does not match, or the peer does not use one")
                }
                return false
            }
            #expect(received.values.isEmpty)
            await open.shutdown()
            await app.shutdown()
            #expect(!appLogs.text.contains(secret))
            #expect(!eventTexts(appEvents.events).contains(secret))
        }

        @Test func aPlaintextChirpPeerGetsNothingThroughAndASecretPeerDialingAnOpenOneIsTold() async throws {
            let type = uniqueServiceType()
            let secret = randomSecret()
            var appConfiguration = try secureConfiguration("app", serviceType: type, secret: secret)
            appConfiguration.handshakeTimeout = .seconds(2)
            let app = Transceiver(configuration: appConfiguration)
            let appEvents = EventRecorder(app)
            let received = Collected<String>()
            try app.receive(Marker.self) { marker in received.append(marker.text) }
            try await app.start()
            let appPort = try #require(app.port)

            // A hand-written plaintext hello and message, as a peer without TLS would send them.
            let hello = Array(
                #"{"protocol":1,"peerID":"PLAIN","name":"plain","service":"\#(type)","metadata":{}}"#.utf8)
            var bytes = withUnsafeBytes(of: UInt32(hello.count + 1).bigEndian, Array.init) + [1] + hello
            bytes += Array("tests.marker {\"text\":\"injected\"}".utf8)
            let raw = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connect(host: "127.0.0.1", port: appPort).get()
            try? await raw.writeAndFlush(ByteBuffer(bytes: bytes))
            try await withTimeout(.seconds(10), "the app to drop the plaintext connection") {
                try await raw.closeFuture.get()
            }
            try await appEvents.waitFor("the app to report the plaintext peer") { event in
                if case .connectionRefused(_, let reason) = event {
                    return reason.contains("shared secret does not match")
                }
                return false
            }

            // The other way round: a peer with a secret dialing an open one (found without discovery).
            let open = Transceiver(configuration: testConfiguration("open", serviceType: uniqueServiceType()))
            let openEvents = EventRecorder(open)
            try await open.start()
            let openPort = try #require(open.port)
            await #expect(throws: (any Error).self) { _ = try await app.connect(host: "127.0.0.1", port: openPort) }
            try await openEvents.waitFor("the open peer to say the caller requires a secret") { event in
                if case .connectionRefused(_, let reason) = event { return reason.contains("requires a shared secret") }
                return false
            }
            #expect(received.values.isEmpty)
            #expect(app.connectedPeers.isEmpty)
            await open.shutdown()
            await app.shutdown()
        }

        // MARK: - What a sniffer sees

        /// Runs a marker message and a request through a relay that records every byte; returns the relay.
        func relayedExchange(secret: String?, marker: String) async throws -> Relay {
            let type = uniqueServiceType()
            var listenerConfiguration = try secureConfiguration("listener", serviceType: type, secret: secret)
            let dialer = try secureTransceiver("dialer", serviceType: type, secret: secret)
            // Only connections through the relay are accepted, so the traffic cannot take the direct path that
            // discovery offers.
            let relayBox = NIOLockedValueBox<Relay?>(nil)
            listenerConfiguration.acceptPolicy = { candidate in
                guard candidate.isInbound, let port = port(of: candidate.address) else { return false }
                return relayBox.withLockedValue { $0?.outboundPorts.contains(port) ?? false }
            }
            let listener = Transceiver(configuration: listenerConfiguration)
            let received = Collected<String>()
            try listener.receive(Marker.self) { marker in received.append(marker.text) }
            try listener.respond(to: Echo.self) { echo, _ in Echo(text: "reply \(echo.text)") }
            try await listener.start()
            let relay = try await Relay.start(forwardingTo: try #require(listener.port))
            relayBox.withLockedValue { $0 = relay }
            try await dialer.start()

            let listenerPeer = try await dialer.connect(host: "127.0.0.1", port: relay.port)
            try await dialer.send(Marker(text: marker), to: listenerPeer)
            let reply = try await dialer.request(Echo(text: marker), to: listenerPeer, as: Echo.self)
            try await received.waitForCount(1)
            #expect(received.values == [marker])
            #expect(reply.text == "reply \(marker)")
            await dialer.shutdown()
            await listener.shutdown()
            await relay.close()
            return relay
        }

        @Test func trafficWithoutASecretCanBeReadOnTheWire() async throws {
            let marker = "MARKER-" + UUID().uuidString
            let relay = try await relayedExchange(secret: nil, marker: marker)
            #expect(relay.capturedContains(marker))
            #expect(relay.capturedContains("listener"))  // the hello, in clear
        }

        @Test func trafficWithASecretIsEncrypted() async throws {
            let marker = "MARKER-" + UUID().uuidString
            let secret = randomSecret()
            let relay = try await relayedExchange(secret: secret, marker: marker)
            let captured = relay.captured
            #expect(captured.count > 500, "the relay carried the exchange")
            #expect(captured.first == 0x16, "a TLS handshake record comes first")
            #expect(!relay.capturedContains(marker))
            #expect(!relay.capturedContains(secret))
            #expect(!relay.capturedContains("listener"))
            #expect(!relay.capturedContains("tests.marker"))
        }

        // MARK: - Handshake limits

        @Test func stalledHandshakesAreDroppedWhileGoodPeersAreServed() async throws {
            let type = uniqueServiceType()
            let secret = randomSecret()
            let logs = LogCapture()
            let metrics = TestMetrics()
            var serverConfiguration = try secureConfiguration(
                "server", serviceType: type, secret: secret, capture: logs)
            serverConfiguration.metricsFactory = metrics
            serverConfiguration.handshakeTimeout = .seconds(1)
            serverConfiguration.maximumPendingHandshakes = 16
            let server = Transceiver(configuration: serverConfiguration)
            let good = try secureTransceiver("good", serviceType: type, secret: secret)
            let late = try secureTransceiver("late", serviceType: type, secret: secret)
            let received = Collected<String>()
            try server.receive(Marker.self) { marker, sender in received.append("\(sender.name) \(marker.text)") }
            try await server.start()
            try await good.start()
            let serverPeer = try #require(try await good.waitForConnectedPeers(1).first)
            let port = try #require(server.port)

            // The start of a TLS ClientHello: a record header announcing 512 bytes, then a few of them.
            let partialClientHello: [UInt8] = [0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03, 0x00]
            var stalled: [any Channel] = []
            for index in 0..<48 {
                let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                    .connect(host: "127.0.0.1", port: port).get()
                // Over the limit, the server closes a connection at once, so the write may fail: that is fine.
                if index.isMultiple(of: 2) { try? await channel.writeAndFlush(ByteBuffer(bytes: partialClientHello)) }
                stalled.append(channel)
                if index.isMultiple(of: 8) { try await good.send(Marker(text: "during \(index)"), to: serverPeer) }
            }
            // A peer that joins during the flood still gets in, once stalled handshakes time out.
            try await late.start()
            let lateServer = try await withTimeout(.seconds(30), "late to connect to the server") { () -> Peer in
                while true {
                    if let peer = late.connectedPeers.first(where: { $0.name == "server" }) { return peer }
                    try await Task.sleep(for: .milliseconds(20))
                }
            }
            try await late.send(Marker(text: "joined"), to: lateServer)
            for (index, channel) in stalled.enumerated() {
                try await withTimeout(.seconds(15), "the server to drop stalled connection \(index)") {
                    try await channel.closeFuture.get()
                }
            }
            try await good.send(Marker(text: "after"), to: serverPeer)
            try await received.waitForCount(8)
            #expect(
                received.values.filter { $0.hasPrefix("good ") } == (0..<6).map { "good during \($0 * 8)" } + [
                    "good after"
                ])
            #expect(received.values.contains("late joined"))
            #expect(Set(server.connectedPeers.map(\.name)) == ["good", "late"])
            // Connections over the limit were closed at once and counted; the app was warned once, with the limit.
            #expect(try metrics.expectCounter("chirp_handshake_limit_hits_total", [("service", type)]).totalValue >= 1)
            let warnings = logs.entries.filter { $0.level == .warning && $0.metadata["limit"] == "16" }
            #expect(warnings.count == 1, "\(logs.lines.suffix(10))")
            for transceiver in [late, good, server] { await transceiver.shutdown() }
        }

        // MARK: - Accept policy

        @Test func theAcceptPolicyRefusesByNameAndTheRefusedPeerIsNotRetriedInATightLoop() async throws {
            let type = uniqueServiceType()
            let malloryAsked = NIOLockedValueBox<[ContinuousClock.Instant]>([])
            var appConfiguration = testConfiguration("app", serviceType: type)
            let appLogs = LogCapture()
            appConfiguration.logger = appLogs.logger("app")
            appConfiguration.acceptPolicy = { candidate in
                if candidate.peer.name == "mallory" { malloryAsked.withLockedValue { $0.append(.now) } }
                return candidate.peer.name != "mallory"
            }
            let app = Transceiver(configuration: appConfiguration)
            let mallory = Transceiver(configuration: testConfiguration("mallory", serviceType: type))
            let alice = Transceiver(configuration: testConfiguration("alice", serviceType: type))
            let appEvents = EventRecorder(app)
            let malloryEvents = EventRecorder(mallory)
            let received = Collected<String>()
            try app.receive(Marker.self) { marker, sender in received.append("\(sender.name) \(marker.text)") }
            try await app.start()
            try await mallory.start()
            try await alice.start()

            let notAccepted = "not accepted by the accept policy"
            try await appEvents.waitFor("the app to refuse mallory") { event in
                if case .connectionRefused(let peer, let reason) = event {
                    return peer.contains("mallory") || reason.contains("mallory")
                }
                return false
            }
            try await malloryEvents.waitFor("mallory to be told") { event in
                if case .connectionRefused(_, let reason) = event { return reason.contains(notAccepted) }
                return false
            }
            try await appLogs.waitForLine(containing: notAccepted)
            let alicePeer = try #require(try await app.waitForConnectedPeers(1).first)
            #expect(alicePeer.name == "alice")
            let appPeer = try await withTimeout(.seconds(20), "alice to connect to the app") { () -> Peer in
                while true {
                    if let peer = alice.connectedPeers.first(where: { $0.name == "app" }) { return peer }
                    try await Task.sleep(for: .milliseconds(20))
                }
            }
            try await alice.send(Marker(text: "accepted"), to: appPeer)
            try await mallory.send(Marker(text: "refused"), to: .all)  // reaches alice (no policy there), never the app
            try await received.waitForCount(1)
            #expect(received.values == ["alice accepted"])
            #expect(!mallory.connectedPeers.contains { $0.name == "app" })

            // Mallory is asked about again (the control: the test sees a retry), but after a backoff, not in a loop: a
            // few times at most in the five seconds from the first time.
            let first = try #require(malloryAsked.withLockedValue { $0.first })
            try await waitUntil(.seconds(60), "mallory to be asked about again, 5 s or more after the first time") {
                malloryAsked.withLockedValue { $0.contains { first.duration(to: $0) >= .seconds(5) } }
            }
            let during = malloryAsked.withLockedValue { $0.filter { first.duration(to: $0) < .seconds(5) }.count }
            #expect(during <= 4, "mallory was asked about \(during) times in 5 s")
            #expect(!app.connectedPeers.contains { $0.name == "mallory" })
            #expect(received.values == ["alice accepted"])
            for transceiver in [alice, mallory, app] { await transceiver.shutdown() }
        }
    }
}
