import ChirpDiscovery
import ChirpTrust
import ChirpWire
import Foundation
import Testing

@testable import Chirp

/// Device identities between real transceivers: mutual TLS 1.3 on real loopback sockets, the real avahi-daemon
/// carrying the advertised fingerprint, trust files and pins files on disk in a scratch directory of each test.
extension LiveTests {
    @Suite struct DeviceTrustTests {
        // MARK: - Trusted devices

        @Test func devicesThatTrustEachOtherConnectAndTheirIdentitiesAreProven() async throws {
            try await withScratch { scratch in
                let type = uniqueServiceType()
                let alice = try TestDevice("alice", in: scratch)
                let bob = try TestDevice("bob", in: scratch)
                try alice.trusts([bob])
                try bob.trusts([alice])
                let aliceTransceiver = alice.transceiver(type)
                let bobTransceiver = bob.transceiver(type)
                let received = Collected<String>()
                try aliceTransceiver.receive(Marker.self) { marker, sender in
                    received.append("\(sender.fingerprint?.description ?? "none") \(marker.text)")
                }
                try aliceTransceiver.respond(to: Echo.self) { echo, _ in Echo(text: "echo: \(echo.text)") }
                let (bobPeer, alicePeer) = try await Pair(alice: aliceTransceiver, bob: bobTransceiver).connect()
                #expect(bobPeer.fingerprint == bob.identity.fingerprint)
                #expect(alicePeer.fingerprint == alice.identity.fingerprint)

                for index in 0..<20 { try await bobTransceiver.send(Marker(text: "m\(index)"), to: alicePeer) }
                let reply = try await bobTransceiver.request(Echo(text: "hi"), to: alicePeer, as: Echo.self)
                try await received.waitForCount(20)
                #expect(received.values == (0..<20).map { "\(bob.identity.fingerprint) m\($0)" })
                #expect(reply.text == "echo: hi")

                // The advertisement says an identity is used, and which.
                let instance = try await advertisement(of: "alice", type: type)
                #expect(instance.txt["sec"] == "id")
                #expect(instance.txt["fp"] == alice.identity.fingerprint.description)
                #expect(!instance.requiresSecret)
                await bobTransceiver.shutdown()
                await aliceTransceiver.shutdown()
            }
        }

        @Test func trafficBetweenIdentifiedDevicesIsEncryptedOnTheWire() async throws {
            try await withScratch { scratch in
                let marker = "MARKER-" + UUID().uuidString
                let listener = try TestDevice("listener", in: scratch)
                let dialer = try TestDevice("dialer", in: scratch)
                try listener.trusts([dialer])
                try dialer.trusts([listener])
                let type = uniqueServiceType()
                var dialerConfiguration = dialer.configuration(type)
                dialerConfiguration.advertises = false
                let listenerTransceiver = listener.transceiver(type)
                let dialerTransceiver = Transceiver(configuration: dialerConfiguration)
                let received = Collected<String>()
                try listenerTransceiver.receive(Marker.self) { marker in received.append(marker.text) }
                try await listenerTransceiver.start()
                let relay = try await Relay.start(forwardingTo: try #require(listenerTransceiver.port))
                try await dialerTransceiver.start()
                let peer = try await dialerTransceiver.connect(host: "127.0.0.1", port: relay.port)
                #expect(peer.fingerprint == listener.identity.fingerprint)
                try await dialerTransceiver.send(Marker(text: marker), to: peer)
                try await received.waitForCount(1)
                #expect(received.values == [marker])
                await dialerTransceiver.shutdown()
                await listenerTransceiver.shutdown()
                await relay.close()
                #expect(!relay.captured.isEmpty)  // the relay did see the traffic...
                #expect(!relay.capturedContains(marker))  // ...and neither the message
                #expect(!relay.capturedContains("listener"))  // nor a hello can be read in it
                #expect(!relay.capturedContains("tests.marker"))
            }
        }

        // MARK: - Refusals

        @Test func aDeviceNotInTheTrustFileIsRefusedAndBothSidesSayWhy() async throws {
            try await withScratch { scratch in
                let type = uniqueServiceType()
                let app = try TestDevice("app", in: scratch)
                let friend = try TestDevice("friend", in: scratch)
                let stranger = try TestDevice("stranger", in: scratch)
                try app.trusts([friend])
                try friend.trusts([app])
                try stranger.trusts([app])
                let appLogs = LogCapture()
                let appTransceiver = app.transceiver(type, capture: appLogs)
                let strangerTransceiver = stranger.transceiver(type)
                let friendTransceiver = friend.transceiver(type)
                let appEvents = EventRecorder(appTransceiver)
                let strangerEvents = EventRecorder(strangerTransceiver)
                let received = Collected<String>()
                try appTransceiver.receive(Marker.self) { marker, sender in
                    received.append("\(sender.name) \(marker.text)")
                }
                try await appTransceiver.start()
                try await strangerTransceiver.start()

                try await appEvents.waitFor("the app to refuse the stranger") { event in
                    if case .connectionRefused(_, let reason) = event {
                        return reason.contains("is not in the trust file")
                    }
                    return false
                }
                try await strangerEvents.waitFor("the stranger to be told why") { event in
                    if case .connectionRefused(_, let reason) = event {
                        return reason.contains("\"app\" does not trust this device (\(stranger.identity.fingerprint))")
                    }
                    return false
                }
                // The app's log says what to run; the stranger is not told the app's paths.
                try await appLogs.waitForLine(containing: "chirp trust add \(stranger.identity.fingerprint) stranger")
                #expect(!eventTexts(strangerEvents.events).contains(scratch))
                #expect(strangerTransceiver.connectedPeers.isEmpty)

                // A trusted device is served meanwhile.
                try await friendTransceiver.start()
                let appPeer = try #require(try await friendTransceiver.waitForConnectedPeers(1).first)
                try await friendTransceiver.send(Marker(text: "hello"), to: appPeer)
                try await received.waitForCount(1)
                #expect(received.values == ["friend hello"])
                #expect(appTransceiver.connectedPeers.map(\.name) == ["friend"])
                for transceiver in [friendTransceiver, strangerTransceiver, appTransceiver] {
                    await transceiver.shutdown()
                }
            }
        }

        @Test func aDeviceWithoutAnIdentityIsNotDialedAndCannotConnect() async throws {
            try await withScratch { scratch in
                let type = uniqueServiceType()
                let app = try TestDevice("app", in: scratch)
                let appTransceiver = app.transceiver(type)
                let openTransceiver = Transceiver(configuration: testConfiguration("open", serviceType: type))
                let appEvents = EventRecorder(appTransceiver)
                let openEvents = EventRecorder(openTransceiver)
                try await appTransceiver.start()
                try await openTransceiver.start()
                try await appEvents.waitFor("the app to say why it does not connect") { event in
                    if case .connectionRefused(_, let reason) = event {
                        return reason.contains("uses no device identity, and we do")
                    }
                    return false
                }
                try await openEvents.waitFor("the open peer to say why it does not connect") { event in
                    if case .connectionRefused(_, let reason) = event {
                        return reason.contains("requires a device identity")
                    }
                    return false
                }
                // Dialing it anyway (an address given by hand) fails: it answers with TLS.
                let port = try #require(appTransceiver.port)
                let error = await #expect(throws: (any Error).self) {
                    _ = try await openTransceiver.connect(host: "127.0.0.1", port: port)
                }
                #expect("\(error.map { "\($0)" } ?? "")".contains("TLS"))
                #expect(appTransceiver.connectedPeers.isEmpty)
                await openTransceiver.shutdown()
                await appTransceiver.shutdown()
            }
        }

        @Test func aPeerWhoseCertificateIsNotTheIdentityItAdvertisedIsRefusedByTheDialer() async throws {
            try await withScratch { scratch in
                let type = uniqueServiceType()
                let alice = try TestDevice("alice", in: scratch)
                let bob = try TestDevice("bob", in: scratch)
                let mallory = try TestDevice("mallory", in: scratch)
                try bob.trusts([alice])
                try mallory.trusts([bob])
                let bobTransceiver = bob.transceiver(type)
                var malloryConfiguration = mallory.configuration(type)
                malloryConfiguration.advertises = false
                let malloryTransceiver = Transceiver(configuration: malloryConfiguration)
                let bobEvents = EventRecorder(bobTransceiver)
                try await malloryTransceiver.start()
                // Mallory advertises alice's fingerprint, alice's name, and her own port.
                var txt = TXTRecord()
                txt.set(TXTRecord.ReservedKey.peerID, "0000-impostor")
                txt.set(TXTRecord.ReservedKey.name, "alice")
                txt.set(TXTRecord.ReservedKey.protocolVersion, String(Hello.currentProtocolVersion))
                txt.set(TXTRecord.ReservedKey.secure, "id")
                txt.set(TXTRecord.ReservedKey.fingerprint, alice.identity.fingerprint.description)
                let impostor = ServiceDiscovery(
                    serviceType: try ServiceType(type), domain: nil,
                    interfaceIndex: malloryConfiguration.interfaceIndex,
                    advertisement: .init(
                        instanceName: "alice-impostor", port: UInt16(try #require(malloryTransceiver.port)), txt: txt),
                    backend: malloryConfiguration.discoveryBackend, logger: testLogger("impostor")
                ) { _ in }
                impostor.start()
                defer { impostor.stop() }
                try await bobTransceiver.start()

                try await bobEvents.waitFor("bob to refuse the impostor") { event in
                    if case .connectionRefused(_, let reason) = event {
                        return reason.contains("advertised the identity \(alice.identity.fingerprint.short)")
                            && reason.contains("its certificate is \(mallory.identity.fingerprint.short)")
                    }
                    return false
                }
                #expect(bobTransceiver.connectedPeers.isEmpty)
                await bobTransceiver.shutdown()
                await malloryTransceiver.shutdown()
            }
        }

        // MARK: - Changes

        @Test func removingADeviceFromTheTrustFileClosesItsConnections() async throws {
            try await withScratch { scratch in
                let type = uniqueServiceType()
                let alice = try TestDevice("alice", in: scratch)
                let bob = try TestDevice("bob", in: scratch)
                let carol = try TestDevice("carol", in: scratch)
                try alice.trusts([bob, carol])
                try bob.trusts([alice])
                try carol.trusts([alice])
                let aliceLogs = LogCapture()
                let aliceTransceiver = alice.transceiver(type, capture: aliceLogs)
                let bobTransceiver = bob.transceiver(type)
                let carolTransceiver = carol.transceiver(type)
                let aliceEvents = EventRecorder(aliceTransceiver)
                let received = Collected<String>()
                try aliceTransceiver.receive(Marker.self) { marker, sender in
                    received.append("\(sender.name) \(marker.text)")
                }
                for transceiver in [aliceTransceiver, bobTransceiver, carolTransceiver] {
                    try await transceiver.start()
                }
                _ = try await aliceTransceiver.waitForConnectedPeers(2)

                // A person removes bob's line, as an editor does: the file is written in place.
                try alice.trusts([carol])
                let removed = ContinuousClock.now
                try await aliceEvents.waitFor("bob's connection to close") { event in
                    if case .peerDisconnected(let peer) = event { return peer.name == "bob" }
                    return false
                }
                let closedAfter = removed.duration(to: .now)
                try await aliceLogs.waitForLine(containing: "was removed from the trust file: closing its connections")
                // Bob comes back (he still advertises) and is refused now.
                try await aliceEvents.waitFor("bob to be refused") { event in
                    if case .connectionRefused(_, let reason) = event {
                        return reason.contains("is not in the trust file")
                    }
                    return false
                }
                #expect(aliceTransceiver.connectedPeers.map(\.name) == ["carol"])
                // Carol is served as before.
                let alicePeer = try #require(carolTransceiver.connectedPeers.first)
                try await carolTransceiver.send(Marker(text: "still here"), to: alicePeer)
                try await received.waitForCount(1)
                #expect(received.values == ["carol still here"])
                print("DeviceTrustTests: bob's connection closed \(closedAfter) after his line was removed")
                for transceiver in [bobTransceiver, carolTransceiver, aliceTransceiver] { await transceiver.shutdown() }
            }
        }

        @Test func aBrokenTrustFileIsRefusedAtStartAndKeepsTheOldOneLater() async throws {
            try await withScratch { scratch in
                let type = uniqueServiceType()
                let alice = try TestDevice("alice", in: scratch)
                let bob = try TestDevice("bob", in: scratch)
                try "chirp:not-a-fingerprint bob\n".write(toFile: alice.trustFile, atomically: false, encoding: .utf8)
                let broken = alice.transceiver(type)
                let error = await #expect(throws: ChirpError.self) { try await broken.start() }
                #expect(error?.code == .invalidConfiguration)
                #expect("\(error.map { "\($0)" } ?? "")".contains(alice.trustFile + ":1:"))

                // Started with a good file, alice keeps it when it is broken later, and says so once.
                try alice.trusts([bob])
                try bob.trusts([alice])
                let aliceLogs = LogCapture()
                let aliceTransceiver = alice.transceiver(type, capture: aliceLogs)
                let bobTransceiver = bob.transceiver(type)
                try await aliceTransceiver.start()
                try await bobTransceiver.start()
                _ = try await aliceTransceiver.waitForConnectedPeers(1)
                try "garbage\n".write(toFile: alice.trustFile, atomically: false, encoding: .utf8)
                try await aliceLogs.waitForLine(containing: "the trust file was not read again")
                #expect(aliceTransceiver.connectedPeers.map(\.name) == ["bob"])
                await bobTransceiver.shutdown()
                await aliceTransceiver.shutdown()
            }
        }

        @Test func trustOnFirstUsePinsTheFirstIdentityAndRefusesAnotherUnderItsName() async throws {
            try await withScratch { scratch in
                let type = uniqueServiceType()
                let app = try TestDevice("app", in: scratch)
                let first = try TestDevice("laptop", in: scratch + "/first")
                let second = try TestDevice("laptop", in: scratch + "/second")
                let appLogs = LogCapture()
                let appTransceiver = Transceiver(
                    configuration: app.configuration(type, trust: .trustOnFirstUse(), capture: appLogs))
                let appEvents = EventRecorder(appTransceiver)
                try await appTransceiver.start()

                let firstTransceiver = Transceiver(configuration: first.configuration(type, trust: .trustOnFirstUse()))
                try await firstTransceiver.start()
                let firstPeer = try #require(try await appTransceiver.waitForConnectedPeers(1).first)
                #expect(firstPeer.fingerprint == first.identity.fingerprint)
                let pins = try String(contentsOfFile: app.identity.directory + "/known-peers", encoding: .utf8)
                #expect(pins.contains("\(first.identity.fingerprint) laptop\n"))
                await firstTransceiver.shutdown()
                try await appEvents.waitFor("the first laptop to leave") { event in
                    if case .peerRemoved(let peer) = event { return peer.name == "laptop" }
                    if case .peerDisconnected(let peer) = event { return peer.name == "laptop" }
                    return false
                }

                // Another device under the same name is refused, loudly, every time.
                let secondTransceiver = Transceiver(
                    configuration: second.configuration(type, trust: .trustOnFirstUse()))
                let secondEvents = EventRecorder(secondTransceiver)
                try await secondTransceiver.start()
                try await appEvents.waitFor("the app to refuse the second laptop") { event in
                    if case .connectionRefused(_, let reason) = event {
                        return reason.contains("PEER IDENTITY HAS CHANGED")
                    }
                    return false
                }
                try await secondEvents.waitFor("the second laptop to be told") { event in
                    if case .connectionRefused(_, let reason) = event {
                        return reason.contains("has another identity pinned under this peer's name")
                    }
                    return false
                }
                try await appLogs.waitForLine(containing: "was pinned as \(first.identity.fingerprint)")
                #expect(appTransceiver.connectedPeers.isEmpty)
                // The pin stays the first laptop's.
                let pinsAfter = try String(contentsOfFile: app.identity.directory + "/known-peers", encoding: .utf8)
                #expect(pinsAfter.contains("\(first.identity.fingerprint) laptop\n"))
                #expect(!pinsAfter.contains(second.identity.fingerprint.description))
                await secondTransceiver.shutdown()
                await appTransceiver.shutdown()
            }
        }
    }
}

/// A device of a test: its identity in `DIRECTORY/NAME`, its trust file beside its key.
struct TestDevice {
    let identity: DeviceIdentity

    init(_ name: String, in directory: String) throws {
        identity = try DeviceIdentity.loadOrCreate(name: name, directory: directory + "/" + name)
    }

    /// The default trust file.
    var trustFile: String { identity.directory + "/trusted-peers" }

    /// Writes the trust file (in place, as an editor would) listing exactly `devices`, labelled by name.
    func trusts(_ devices: [TestDevice]) throws {
        var store = TrustStore()
        for device in devices {
            try store.add(TrustEntry(fingerprint: device.identity.fingerprint, label: device.identity.name))
        }
        try store.text.write(toFile: trustFile, atomically: false, encoding: .utf8)
    }

    /// A loopback configuration with this identity and `trust`.
    func configuration(_ type: String, trust: PeerTrust = .trustedPeers(), capture: LogCapture? = nil) -> Configuration
    {
        var configuration = testConfiguration(identity.name, serviceType: type)
        if let capture { configuration.logger = capture.logger(identity.name) }
        configuration.security = .identity(identity, trust: trust)
        return configuration
    }

    /// A transceiver with ``configuration(_:trust:capture:)``, trusting the devices of its trust file.
    func transceiver(_ type: String, capture: LogCapture? = nil) -> Transceiver {
        Transceiver(configuration: configuration(type, capture: capture))
    }
}

/// Runs `body` with a new scratch directory (mode 0700), removed at the end.
func withScratch(_ body: (String) async throws -> Void) async throws {
    let scratch = NSTemporaryDirectory() + "chirp-trust-test-" + UUID().uuidString.prefix(8)
    try FileManager.default.createDirectory(
        atPath: scratch, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    defer { try? FileManager.default.removeItem(atPath: scratch) }
    try await body(scratch)
}

/// The advertisement of the peer named `name` on loopback, as a browser sees it.
func advertisement(of name: String, type: String) async throws -> ServiceInstance {
    let browser = try ServiceBrowser(serviceType: type, interface: .loopback)
    return try await withTimeout(.seconds(20), "\(name)'s advertisement") { () -> ServiceInstance in
        for await event in browser.events() {
            if case .found(let instance) = event, instance.name == name { return instance }
        }
        throw TimeoutError(what: "\(name)'s advertisement", timeout: .seconds(20))
    }
}

extension LiveTests.DeviceTrustTests {
    /// A peer written from Docs/Protocol.md in Python (`scripts/testing/identity_peer.py`, standard library only)
    /// talks to a transceiver with a device identity: TLS 1.3 with its client certificate, the readable fingerprint
    /// computed on its own, the hellos in their order, a message delivered; and it is refused while not trusted.
    @Test func aPythonPeerWithAClientCertificateTalksToATransceiver() async throws {
        try await withScratch { scratch in
            let type = uniqueServiceType()
            let app = try TestDevice("app", in: scratch)
            let python = try TestDevice("python", in: scratch)
            try app.trusts([])
            let appTransceiver = app.transceiver(type)
            let received = Collected<String>()
            try appTransceiver.receive(Marker.self) { marker, sender in
                received.append("\(sender.name) \(sender.fingerprint?.description ?? "-") \(marker.text)")
            }
            try await appTransceiver.start()
            let port = try #require(appTransceiver.port)
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("scripts/testing/identity_peer.py").path
            let arguments = [
                script, "127.0.0.1", String(port), python.identity.directory + "/certificate.pem",
                python.identity.directory + "/key.pem", app.identity.fingerprint.description, type, "python",
                Marker.chirpTypeName, #"{"text":"from python"}"#
            ]

            // Not trusted yet: told so in a refuse frame, after its hello.
            let refused = try await TestProcess("/usr/bin/env", ["python3"] + arguments, input: .closed)
            #expect(try await refused.waitForExit() == 2, "\(refused.standardOutput)\(refused.standardError)")
            #expect(refused.lines.contains("tls TLSv1.3"), "\(refused.lines)")
            #expect(refused.lines.contains("fingerprint ok \(app.identity.fingerprint)"), "\(refused.lines)")
            #expect(
                refused.lines.contains { $0.hasPrefix("refused:") && $0.contains("does not trust this device") },
                "\(refused.lines)")

            // Trusted: hellos both ways, and the message arrives, from the fingerprint TLS proved.
            try app.trusts([python])
            let trustedAt = ContinuousClock.now
            var accepted: TestProcess?
            // The app reads the trust file within 250 ms of the change: the first tries may still be refused.
            while accepted == nil, trustedAt.duration(to: .now) < .seconds(10) {
                let attempt = try await TestProcess("/usr/bin/env", ["python3"] + arguments, input: .closed)
                let status = try await attempt.waitForExit()
                if status == 0 { accepted = attempt } else { #expect(status == 2, "\(attempt.lines)") }
            }
            let peer = try #require(accepted, "the python peer was never accepted")
            #expect(peer.lines.contains("hello from app"), "\(peer.lines)")
            try await received.waitForCount(1)
            #expect(received.values == ["python \(python.identity.fingerprint) from python"])
            await appTransceiver.shutdown()
        }
    }
}
