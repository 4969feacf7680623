import Foundation
import Testing

/// A peer process is SIGKILLed on its host, then started again.
extension FaultTests {
    @Suite struct KilledPeerTests {
        /// Heartbeats of every probe in this suite: the bound for noticing a dead peer is timeout + slack.
        static let heartbeat = ["--heartbeat-interval", "0.5", "--heartbeat-timeout", "2.5"]
        static let boundMs = 2500 + 2000

        @Test(.netns) func aKilledPeerIsReportedDisconnectedOnEveryHostAndComesBackOnce() async throws {
            let (harness, type, probes) = try await Harness.connected(hosts: 3, service: "k", Self.heartbeat)
            defer { harness.tearDown() }
            let (a, b, c) = (probes[0], probes[1], probes[2])

            let marks = (a: a.mark, b: b.mark)
            let killed = nowMs()
            c.signal(SIGKILL)
            for (observer, mark) in [(a, marks.a), (b, marks.b)] {
                let disconnected = try await observer.waitFor(from: mark, "c disconnected") {
                    $0.is("peerDisconnected", name: "c")
                }
                measure("kill.disconnected.\(observer.name)", disconnected.ms - killed)
                #expect(
                    disconnected.ms - killed <= Self.boundMs,
                    "\(observer.name) noticed c's death after \(disconnected.ms - killed) ms")
                let gone = try await observer.waitFor(from: mark, "c gone from the available peers") { event in
                    event.event == "availablePeers" && !(event.names ?? []).contains("c")
                }
                measure("kill.gone.\(observer.name)", gone.ms - killed)
                #expect(gone.ms - killed <= Self.boundMs)
            }

            // Started again (a new process, so a new peer id): exactly one c, never two.
            let again = (a: a.mark, b: b.mark)
            let restarted = nowMs()
            let c2 = try await harness.probe(on: "h3", name: "c", service: type, Self.heartbeat)
            var newID = ""
            for (observer, mark) in [(a, again.a), (b, again.b)] {
                let back = try await observer.waitFor(from: mark, "c connected again") {
                    $0.is("peerConnected", name: "c")
                }
                measure("kill.reconnected.\(observer.name)", back.ms - restarted)
                newID = back.id ?? ""
            }
            try await c2.waitConnected(to: ["a", "b"])
            // A second c could only come from a stale advertisement of the dead one: the daemons a and b browse list
            // one c, the new one (that they list the new one is the control that they would list both).
            let newInstance = "c [\(newID.prefix(8))]"
            for host in ["h1", "h2"] {
                try await waitUntil(
                    .seconds(30), "\(host)'s daemon to list only \(newInstance)", every: .milliseconds(200)
                ) {
                    let instances = try await advertisedInstances(of: type) { command in
                        try await harness.start(on: host, command, name: "avahi-browse on \(host)")
                    }
                    return instances.filter { $0.hasPrefix("c [") } == [newInstance]
                }
            }
            for observer in [a, b] {
                let mark = observer.mark
                observer.command("peers")
                let peers = try await observer.waitFor(from: mark, "peers answer") { $0.event == "peers" }
                #expect(
                    (peers.names ?? []).filter { $0 == "c" }.count == 1, "\(observer.name) lists \(peers.names ?? [])")
                #expect(
                    !observer.sawDuplicatePeer,
                    "\(observer.name) listed a peer twice: \(observer.events.filter { $0.event == "availablePeers" }.compactMap(\.names))"
                )
                let connects = observer.events.filter { $0.is("peerConnected", name: "c") }.count
                #expect(
                    connects == 2,
                    "\(observer.name) reported c connected \(connects) times (once before the kill, once after)")
            }
        }
    }
}
