import Chirp
import Foundation
import Testing

/// Transceivers in this process find each other through the real avahi-daemon and connect once per pair.
extension LiveTests {
    @Suite struct DiscoveryAndConnectionTests {
        @Test func twoTransceiversFindEachOtherAndConnectOnce() async throws {
            let type = uniqueServiceType()
            var aliceConfiguration = testConfiguration("alice", serviceType: type)
            aliceConfiguration.metadata = ["role": "tester"]
            let alice = Transceiver(configuration: aliceConfiguration)
            let bob = Transceiver(configuration: testConfiguration("bob", serviceType: type))
            let aliceEvents = EventRecorder(alice)
            let bobEvents = EventRecorder(bob)
            try await alice.start()
            try await bob.start()

            let bobSees = try await bob.waitForConnectedPeers(1)
            try await alice.waitForConnectedPeers(1)
            #expect(bobSees.map(\.name) == ["alice"])
            #expect(bobSees.first?.metadata == ["role": "tester"])
            #expect(alice.connectedPeers.map(\.name) == ["bob"])

            await alice.shutdown()
            await bob.shutdown()
            // Exactly one connection per pair, even though both sides may dial.
            #expect(aliceEvents.connectedNames() == ["bob"])
            #expect(bobEvents.connectedNames() == ["alice"])
        }

        @Test func aTransceiverThatDoesNotAdvertiseFindsAndDialsPeersButIsNeverAnnounced() async throws {
            let type = uniqueServiceType()
            let app = Transceiver(configuration: testConfiguration("app", serviceType: type))
            try app.respond(to: String.self) { text, _ in text.uppercased() }
            let appEvents = EventRecorder(app)
            var toolConfiguration = testConfiguration("tool", serviceType: type)
            toolConfiguration.advertises = false
            let tool = Transceiver(configuration: toolConfiguration)
            let toolEvents = EventRecorder(tool)
            try await app.start()
            try await appEvents.waitFor("the app advertised") { if case .advertised = $0 { true } else { false } }
            try await tool.start()

            // The tool hears of the app's instance before it is resolved, then dials it.
            try await toolEvents.waitFor("the app's instance") {
                if case .instanceFound(let name) = $0 { name.hasPrefix("app [") } else { false }
            }
            let peers = try await tool.waitForConnectedPeers(1)
            let app0 = try #require(peers.first)
            #expect(try await tool.request("hello", to: app0, as: String.self) == "HELLO")
            #expect(app.connectedPeers.isEmpty)  // connected, and answered, but a tool: not listed (ToolTests)

            // The tool was never announced: the app's browser never reported its instance.
            #expect(!toolEvents.events.contains { if case .advertised = $0 { true } else { false } })
            #expect(!appEvents.events.contains { if case .instanceFound = $0 { true } else { false } })
            await tool.shutdown()
            await app.shutdown()
        }

        @Test func eightTransceiversFormAFullMeshWithOneConnectionPerPair() async throws {
            let type = uniqueServiceType()
            let names = (1...8).map { "peer\($0)" }
            let transceivers = names.map { name in
                var configuration = testConfiguration(name, serviceType: type)
                // A loaded machine may starve a heartbeat for seconds; only the tie-break may close a connection here.
                configuration.heartbeatTimeout = .seconds(60)
                return Transceiver(configuration: configuration)
            }
            let recorders = transceivers.map(EventRecorder.init)
            for transceiver in transceivers { try await transceiver.start() }
            for transceiver in transceivers { try await transceiver.waitForConnectedPeers(7, timeout: 60) }
            for (index, transceiver) in transceivers.enumerated() {
                let expected = Set(names).subtracting([names[index]])
                #expect(Set(transceiver.connectedPeers.map(\.name)) == expected)
                #expect(transceiver.availablePeers.count == 7)
            }
            // Racing duplicate dials have settled once the kernel holds one connection per pair (a duplicate is
            // established, then retired and closed); then check that nobody reported a peer twice, or lost one.
            let ports = Set(transceivers.compactMap(\.port))
            #expect(ports.count == 8)
            try await waitUntil(.seconds(60), "28 connections (\(establishedConnections(toPorts: ports)))") {
                establishedConnections(toPorts: ports) == 28
            }
            for (index, recorder) in recorders.enumerated() {
                let connected = recorder.connectedNames()
                #expect(connected.count == 7, "\(names[index]) saw \(connected)")
                #expect(recorder.disconnectedNames().isEmpty, "\(names[index]) lost \(recorder.disconnectedNames())")
            }
            // The control: the recorders do see a peer that goes.
            await transceivers[7].shutdown()
            for recorder in recorders.prefix(7) {
                try await recorder.waitFor("peer8 disconnected") {
                    if case .peerDisconnected(let peer) = $0 { peer.name == "peer8" } else { false }
                }
            }
            for transceiver in transceivers { await transceiver.shutdown() }
        }

        @Test func aStoppedTransceiverCanResumeAndIsNotSeenTwice() async throws {
            let type = uniqueServiceType()
            let alice = Transceiver(configuration: testConfiguration("alice", serviceType: type))
            let bob = Transceiver(configuration: testConfiguration("bob", serviceType: type))
            let recorder = EventRecorder(alice)
            try await alice.start()
            try await bob.start()
            try await alice.waitForConnectedPeers(1)

            await bob.shutdown()
            try await recorder.waitFor("bob removed") {
                if case .peerRemoved(let peer) = $0 { peer.name == "bob" } else { false }
            }
            try await bob.start()
            try await alice.waitForConnectedPeers(1)
            #expect(alice.availablePeers.map(\.name) == ["bob"])
            await alice.shutdown()
            await bob.shutdown()
        }

        @Test func callbacksLikeMultipeerKit() async throws {
            let type = uniqueServiceType()
            let alice = Transceiver(configuration: testConfiguration("alice", serviceType: type))
            let bob = Transceiver(configuration: testConfiguration("bob", serviceType: type))
            let (stream, continuation) = AsyncStream.makeStream(of: [Peer].self)
            alice.availablePeersDidChange = { peers in continuation.yield(peers) }
            try await alice.start()
            try await bob.start()
            let seen = try await withTimeout(.seconds(20), "bob connected in availablePeersDidChange") {
                for await peers in stream where peers.contains(where: { $0.name == "bob" && $0.isConnected }) {
                    return peers
                }
                return []
            }
            #expect(seen.map(\.name) == ["bob"])
            await alice.shutdown()
            await bob.shutdown()
        }

        @Test func resumeAndStopAreIdempotent() async throws {
            let transceiver = Transceiver(configuration: testConfiguration("solo", serviceType: uniqueServiceType()))
            try await transceiver.start()
            try await transceiver.start()
            #expect(transceiver.isRunning)
            await transceiver.shutdown()
            await transceiver.shutdown()
            #expect(!transceiver.isRunning)
            #expect(throws: ChirpError.notRunning) { try transceiver.send("x", to: .all) }
        }

        @Test func aHundredResumeStopCyclesLeakNoFileDescriptors() async throws {
            let type = uniqueServiceType()
            let peer = Transceiver(configuration: testConfiguration("steady", serviceType: type))
            try await peer.start()
            let transceiver = Transceiver(configuration: testConfiguration("cycler", serviceType: type))
            // Warm up once (NIO's singleton loops and the DNS-SD library allocate on first use).
            try await transceiver.start()
            try await transceiver.waitForConnectedPeers(1)
            await transceiver.shutdown()
            let before = openFileDescriptorCount()
            for cycle in 0..<100 {
                try await transceiver.start()
                if cycle % 25 == 0 { try await transceiver.waitForConnectedPeers(1) }
                await transceiver.shutdown()
            }
            // Let the steady peer notice the last stop, so its own sockets are settled too.
            try await withTimeout(.seconds(10), "the cycler to disconnect") {
                while !peer.connectedPeers.isEmpty { try await Task.sleep(for: .milliseconds(10)) }
            }
            let after = openFileDescriptorCount()
            // A leak would grow with the cycles (at least one descriptor per cycle: 100 here). The count is the
            // process's, and other suites run beside this one and open and close sockets of their own: allow for a few.
            #expect(after <= before + 16, "file descriptors: \(before) before, \(after) after 100 cycles")
            await peer.shutdown()
        }
    }
}
