import Chirp
import Foundation
import Testing

/// Peers in separate processes: the `chat` example, as a user runs it.
extension LiveTests {
    @Suite struct ProcessTests {
        func chat(_ name: String, _ type: String) async throws -> TestProcess {
            try await TestProcess(
                binaryPath("chat"), ["--name", name, "--service", type, "--loopback", "--log-level", "debug"],
                name: name)
        }

        @Test func twoChatProcessesTalk() async throws {
            let type = uniqueServiceType()
            let alice = try await chat("alice", type)
            let bob = try await chat("bob", type)
            try await alice.waitForLine("a connection to bob") { $0 == "* connected to bob" }
            try await bob.waitForLine("a connection to alice") { $0 == "* connected to alice" }
            alice.send("hello bob")
            bob.send("hi alice")
            try await bob.waitForLine("alice's line") { $0 == "[alice] hello bob" }
            try await alice.waitForLine("bob's line") { $0 == "[bob] hi alice" }
            alice.closeInput()
            #expect(try await alice.waitForExit() == 0)
            try await bob.waitForLine("alice leaving") { $0 == "* alice left" }
            bob.kill()
        }

        @Test func eightProcessesEachConnectToEveryOtherOnce() async throws {
            let type = uniqueServiceType()
            let observer = Transceiver(configuration: testConfiguration("observer", serviceType: type))
            let recorder = EventRecorder(observer)
            try await observer.start()
            let names = (1...7).map { "chat\($0)" }
            var chats: [TestProcess] = []
            for name in names { chats.append(try await chat(name, type)) }
            try await observer.waitForConnectedPeers(7, timeout: 40)
            for chat in chats {
                let others = Set(names + ["observer"]).subtracting([chat.name])
                for other in others {
                    try await chat.waitForLine("connected to \(other)", where: { $0 == "* connected to \(other)" })
                }
            }
            try await Task.sleep(for: .seconds(1))  // let any racing duplicate settle before counting
            for chat in chats {
                let connected = chat.lines.filter { $0.hasPrefix("* connected to ") }
                #expect(connected.count == 7, "\(chat.name): \(connected)")
                #expect(Set(connected).count == 7, "\(chat.name) reported a peer twice: \(connected)")
                #expect(!chat.lines.contains { $0.hasSuffix(" left") }, "\(chat.name): \(chat.lines)")
            }
            #expect(recorder.connectedNames().count == 7)
            chats.forEach { $0.kill() }
            await observer.shutdown()
        }

        @Test func aKilledPeerIsReportedDisconnectedAndNeverAppearsTwice() async throws {
            let type = uniqueServiceType()
            var configuration = testConfiguration("observer", serviceType: type)
            configuration.heartbeatTimeout = .seconds(2)
            let observer = Transceiver(configuration: configuration)
            let recorder = EventRecorder(observer)
            try await observer.start()
            let victim = try await chat("victim", type)
            try await observer.waitForConnectedPeers(1)

            let clock = ContinuousClock()
            let killed = clock.now
            victim.signal(SIGKILL)
            try await recorder.waitFor("victim disconnected") { if case .peerDisconnected = $0 { true } else { false } }
            // The kernel closes a killed process's sockets: noticed at once, and at worst by the heartbeat timeout (2 s).
            // The bound is generous for a loaded 2-core machine; without heartbeats a dead peer could go unnoticed for hours.
            #expect(clock.now - killed <= .seconds(10), "heartbeat bound")
            try await recorder.waitFor("victim removed") { if case .peerRemoved = $0 { true } else { false } }
            #expect(observer.availablePeers.isEmpty)

            // It comes back: one peer again, never two.
            let again = try await chat("victim", type)
            try await observer.waitForConnectedPeers(1)
            try await Task.sleep(for: .milliseconds(500))
            #expect(observer.availablePeers.map(\.name) == ["victim"])
            #expect(recorder.connectedNames() == ["victim", "victim"])
            again.kill()
            await observer.shutdown()
        }

        @Test func aFrozenPeerIsReportedWithinTheHeartbeatBound() async throws {
            let type = uniqueServiceType()
            var configuration = testConfiguration("observer", serviceType: type)
            configuration.heartbeatInterval = .milliseconds(500)
            configuration.heartbeatTimeout = .seconds(2)
            let observer = Transceiver(configuration: configuration)
            let recorder = EventRecorder(observer)
            try await observer.start()
            let frozen = try await chat("frozen", type)
            try await observer.waitForConnectedPeers(1)

            let clock = ContinuousClock()
            let stopped = clock.now
            frozen.signal(SIGSTOP)
            try await recorder.waitFor("frozen peer disconnected") {
                if case .peerDisconnected = $0 { true } else { false }
            }
            let elapsed = clock.now - stopped
            // Noticed by the heartbeat (timeout 2 s): not before half of it, and within it plus generous slack for a
            // loaded 2-core machine (a frozen peer's sockets stay open: without heartbeats it would never be noticed).
            #expect(elapsed >= .seconds(1) && elapsed <= .seconds(10), "reported after \(elapsed)")
            frozen.signal(SIGCONT)
            // Thawed, it answers again and is reconnected.
            try await observer.waitForConnectedPeers(1, timeout: 30)
            frozen.kill()
            await observer.shutdown()
        }
    }
}
