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

        /// An observer (heartbeat timeout 2 s, and `heartbeatInterval` when given) connected to a chat process
        /// named `name`, on a fresh service type.
        func observedChat(
            _ name: String, heartbeatInterval: Duration? = nil
        ) async throws -> (observer: Transceiver, recorder: EventRecorder, chat: TestProcess, type: String) {
            let type = uniqueServiceType()
            var configuration = testConfiguration("observer", serviceType: type)
            if let heartbeatInterval { configuration.heartbeatInterval = heartbeatInterval }
            configuration.heartbeatTimeout = .seconds(2)
            let observer = Transceiver(configuration: configuration)
            let recorder = EventRecorder(observer)
            try await observer.start()
            let process = try await chat(name, type)
            try await observer.waitForConnectedPeers(1)
            return (observer, recorder, process, type)
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
            // Generous bounds: seven processes starting at once on a loaded 2-core machine.
            try await observer.waitForConnectedPeers(7, timeout: 60)
            for chat in chats {
                let others = Set(names + ["observer"]).subtracting([chat.name])
                for other in others {
                    try await chat.waitForLine(timeout: .seconds(60), "connected to \(other)") {
                        $0 == "* connected to \(other)"
                    }
                }
            }
            // Then a round of messages, each chat to all the others, before counting: a line goes out on the
            // connection each pair kept, so any second connection of a pair (both dialed at once) has been settled by
            // the time it arrives, and would have been reported by then.
            for chat in chats { chat.send("hello from \(chat.name)") }
            for chat in chats {
                for other in names where other != chat.name {
                    try await chat.waitForLine(timeout: .seconds(60), "\(other)'s line") {
                        $0 == "[\(other)] hello from \(other)"
                    }
                }
            }
            for chat in chats {
                let connected = chat.lines.filter { $0.hasPrefix("* connected to ") }
                #expect(connected.count == 7, "\(chat.name): \(connected)")
                #expect(Set(connected).count == 7, "\(chat.name) reported a peer twice: \(connected)")
                // A " left" line would be a connection lost (and, under load, maybe a heartbeat timed out: chat keeps
                // the library's 2.5 s; its standard error says why).
                #expect(!chat.lines.contains { $0.hasSuffix(" left") }, "\(chat.name): \(chat.transcript)")
            }
            #expect(recorder.connectedNames().count == 7)
            #expect(recorder.disconnectedNames().isEmpty, "\(recorder.disconnectedNames())")

            // The control: a chat that leaves is reported so, in the very lines checked above, by every other one.
            let leaving = chats[0]
            leaving.closeInput()
            #expect(try await leaving.waitForExit(timeout: .seconds(60)) == 0, "\(leaving.transcript)")
            for chat in chats.dropFirst() {
                try await chat.waitForLine(timeout: .seconds(60), "\(leaving.name) leaving") {
                    $0 == "* \(leaving.name) left"
                }
            }
            try await recorder.waitFor(timeout: 60, "\(leaving.name) disconnected") { event in
                if case .peerDisconnected(let peer) = event { return peer.name == leaving.name }
                return false
            }
            chats.forEach { $0.kill() }
            await observer.shutdown()
        }

        @Test func aKilledPeerIsReportedDisconnectedAndNeverAppearsTwice() async throws {
            let (observer, recorder, victim, type) = try await observedChat("victim")

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
            // A second victim could only come from a stale advertisement of the killed one: the daemon the observer
            // browses lists one victim, the new one (that it lists the new one is the control that it would list both).
            let newInstance = "victim [\(try #require(observer.connectedPeers.first).id.prefix(8))]"
            try await waitUntil(.seconds(20), "the daemon to list only \(newInstance)", every: .milliseconds(100)) {
                try await advertisedInstances(of: type).filter { $0.hasPrefix("victim") } == [newInstance]
            }
            #expect(observer.availablePeers.map(\.name) == ["victim"])
            #expect(recorder.connectedNames() == ["victim", "victim"])
            again.kill()
            await observer.shutdown()
        }

        @Test func aFrozenPeerIsReportedWithinTheHeartbeatBound() async throws {
            let (observer, recorder, frozen, _) = try await observedChat(
                "frozen", heartbeatInterval: .milliseconds(500))

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
