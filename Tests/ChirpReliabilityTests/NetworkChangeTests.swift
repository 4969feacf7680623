import Foundation
import Testing

/// Networks that change under running peers: a host gets a new address, one of two interfaces goes, a host sleeps
/// (SIGSTOP on everything it runs). Everything comes back by itself; Docs/Reliability.md, "Networks that change", has
/// the figures (`measure` lines).
extension FaultTests {
    @Suite struct NetworkChangeTests {
        static let heartbeat = ["--heartbeat-interval", "0.5", "--heartbeat-timeout", "2.5"]
        /// Dropping a host that sleeps: its kernel still acknowledges, so the silence rule waits twice the heartbeat
        /// timeout (Docs/Protocol.md section 7), + slack.
        static let sleepDropBoundMs = 2 * 2500 + 2000
        /// Back to a full mesh once the network allows it (the goal is 3 s; generous for a loaded CI machine).
        static let recoveryBoundMs = 15_000
        /// How long a host sleeps: 8 s, beyond the heartbeat timeout; 60 s with `CHIRP_NETNS_LONG=1` (`make netns-long`).
        static let sleepSeconds = LongRuns.enabled ? 60 : 8

        /// The host part of `ip:port` (IPv4).
        static func host(_ endpoint: String) -> String {
            endpoint.split(separator: ":").dropLast().joined(separator: ":")
        }

        /// The established connections on `host` whose far end is at `address`.
        static func connections(on host: String, to address: String, in harness: Harness) throws -> Int {
            try harness.establishedConnections(on: host).filter { Self.host($0.remote) == address }.count
        }

        /// Waits until `probe` says (its `peers` command) that it is connected to every one of `names`.
        static func waitConnectedNow(_ probe: ProbeProcess, to names: Set<String>) async throws {
            try await waitUntil(.seconds(30), "\(probe.name) connected to \(names.sorted())", every: .milliseconds(100))
            {
                let mark = probe.mark
                probe.command("peers")
                let peers = try await probe.waitFor(from: mark, "\(probe.name)'s peers") { $0.event == "peers" }
                return names.isSubset(of: Set(peers.connected ?? []))
            }
        }

        /// Messages both ways and a request: every one arrives once.
        static func traffic(between a: ProbeProcess, and b: ProbeProcess) async throws {
            try await a.send(20, to: b)
            try await b.send(20, to: a)
            let mark = a.mark
            a.command("request \(b.name) 5")
            let report = try await a.waitFor(from: mark, timeout: 60, "5 requests answered") { $0.event == "requested" }
            #expect(report.ok == 5, "requests failed: \(report.errors ?? [])")
            for (receiver, sender) in [(b, a.name), (a, b.name)] {
                let seqs = receiver.receivedSeqs(from: sender)
                #expect(Set(seqs).count == seqs.count, "\(receiver.name) got a message of \(sender) twice: \(seqs)")
            }
        }

        /// h2 gets a new address (the old one removed, a new one added, as DHCP after a reconnect): the connections to
        /// the old address are closed, the others reach b again at the new one, and messages and requests work.
        @Test(.netns) func anAddressChangeClosesTheOldConnectionsAndThePeerIsReachedAtTheNewAddress() async throws {
            let (harness, _, probes) = try await Harness.connected(hosts: 3, service: "r", Self.heartbeat)
            defer { harness.tearDown() }
            let (a, b, c) = (probes[0], probes[1], probes[2])
            try await a.send(10, to: b)

            let old = try harness.address("h2")
            // The positive control of "no connection to the old address" below: there is one now.
            #expect(try Self.connections(on: "h1", to: old, in: harness) == 1)

            let moved = nowMs()
            let new = try harness.run(["readdress", "h2"]).trimmingCharacters(in: .whitespacesAndNewlines)
            let now = try harness.address("h2")
            #expect(new != old && now == new, "readdress gave \(new), h2 has \(now)")

            // Each of the others ends with one connection to b, at its new address, and none at the old one: either
            // its heartbeat ended the old connection and it dialed b again (a `peerDisconnected`, then a
            // `peerConnected`), or b, which closed its connections as soon as its address was gone, dialed it first
            // and the new connection replaced the old one (no event: the peer stayed connected).
            for (host, observer) in [("h1", a), ("h3", c)] {
                try await waitUntil(
                    .seconds(30), "\(host): one connection to b at \(new), none at \(old)", every: .milliseconds(50)
                ) {
                    try Self.connections(on: host, to: old, in: harness) == 0
                        && Self.connections(on: host, to: new, in: harness) == 1
                }
                let took = nowMs() - moved
                measure("readdress.at-new-address.\(observer.name)", took)
                #expect(took <= Self.recoveryBoundMs, "\(observer.name) reached b's new address after \(took) ms")
            }
            try await Self.waitConnectedNow(b, to: ["a", "c"])
            try await Self.waitConnectedNow(a, to: ["b", "c"])
            try await Self.waitConnectedNow(c, to: ["a", "b"])
            measure("readdress.full-mesh", nowMs() - moved)
            try await Self.traffic(between: a, and: b)
            try await Self.traffic(between: c, and: b)
            for probe in [a, b, c] {
                #expect(!probe.sawDuplicatePeer, "\(probe.name) listed a peer twice")
            }
        }

        /// Two hosts joined by two links; the interface that carries their connection goes down on h2: the pair ends
        /// with one connection, over the other link, and messages flow.
        ///
        /// h2 sees its interface go: its heartbeat finds the connection's local address on an interface that is down
        /// (after two quiet intervals) and closes it, and it dials h1 over the other link. h1 keeps the peer connected
        /// throughout when that new connection replaces its stale one (the tie-break, or the look at the stale one's
        /// silence: no event), or reports it disconnected and connected again when its heartbeat ends the stale one
        /// first; so h1 is judged by its connections and its `peers` answer.
        @Test(.netns) func oneOfTwoInterfacesGoingDownMovesThePairToTheOther() async throws {
            let harness = try Harness(hosts: 2, links: 2)
            defer { harness.tearDown() }
            let probes = try await harness.connectedProbes(service: uniqueServiceType("i"), Self.heartbeat)
            let (a, b) = (probes[0], probes[1])
            try await a.send(10, to: b)

            let first = (eth0: try harness.address("h2", on: "eth0"), eth1: try harness.address("h2", on: "eth1"))
            // The connection's link now: the positive control of "none left on it" below.
            let connections = try harness.establishedConnections(on: "h1").map { Self.host($0.remote) }
            #expect(connections.count == 1, "h1's connections: \(connections)")
            let (down, other, lostAddress, otherAddress) =
                connections.first == first.eth1
                ? ("eth1", "eth0", first.eth1, first.eth0) : ("eth0", "eth1", first.eth0, first.eth1)
            #expect(connections.first == lostAddress)

            let marks = (a: a.mark, b: b.mark)
            let cut = nowMs()
            try harness.run(["ifdown", "h2", down])
            let backB = try await b.waitFor(from: marks.b, timeout: 40, "a connected again over \(other)") {
                $0.is("peerConnected", name: "a")
            }
            measure("ifdown.reconnected.b", backB.ms - cut)
            try await waitUntil(.seconds(40), "h1: one connection, to \(otherAddress)", every: .milliseconds(50)) {
                try harness.establishedConnections(on: "h1").map { Self.host($0.remote) } == [otherAddress]
            }
            let moved = nowMs() - cut
            measure("ifdown.one-connection", moved)
            #expect(max(moved, backB.ms - cut) <= Self.recoveryBoundMs)
            try await Self.waitConnectedNow(a, to: ["b"])
            try await Self.waitConnectedNow(b, to: ["a"])
            measure("ifdown.both-connected", nowMs() - cut)
            try await Self.traffic(between: a, and: b)
            #expect(!a.sawDuplicatePeer && !b.sawDuplicatePeer)
        }

        /// h2 sleeps for 8 s or 60 s (every process of it stopped; its kernel still answers): the others drop it within the
        /// heartbeat bound and are connected to it again after it resumes; no message twice.
        @Test(.netns) func aHostAsleepPastTheHeartbeatIsDroppedAndRejoinsOnceItWakes() async throws {
            let (harness, _, probes) = try await Harness.connected(hosts: 3, service: "s", Self.heartbeat)
            defer { harness.tearDown() }
            let (a, b, c) = (probes[0], probes[1], probes[2])
            try await a.send(10, to: b)

            let marks = (a: a.mark, b: b.mark, c: c.mark)
            let frozen = nowMs()
            try harness.run(["freeze", "h2"])
            defer { _ = try? harness.run(["thaw", "h2"]) }
            for (observer, mark) in [(a, marks.a), (c, marks.c)] {
                let lost = try await observer.waitFor(from: mark, timeout: 20, "b dropped by \(observer.name)") {
                    $0.is("peerDisconnected", name: "b")
                }
                measure("sleep.dropped.\(observer.name)", lost.ms - frozen)
                #expect(lost.ms - frozen <= Self.sleepDropBoundMs)
            }
            // a and c stay connected to each other meanwhile (the positive control of "dropped").
            #expect(!a.events.contains { $0.is("peerDisconnected", name: "c") })

            // 8 s after the freeze (60 s with CHIRP_NETNS_LONG=1), h2 wakes: the length of the fault this test
            // injects, not a settling pause.
            let asleepFor = Self.sleepSeconds * 1000 - (nowMs() - frozen)
            if asleepFor > 0 { try await Task.sleep(for: .milliseconds(asleepFor)) }
            let thawMarks = (a: a.mark, b: b.mark, c: c.mark)
            let thawed = nowMs()
            try harness.run(["thaw", "h2"])
            for (observer, mark) in [(a, thawMarks.a), (c, thawMarks.c)] {
                let back = try await observer.waitFor(from: mark, timeout: 40, "b back on \(observer.name)") {
                    $0.is("peerConnected", name: "b")
                }
                measure("sleep.reconnected.\(observer.name)", back.ms - thawed)
                #expect(back.ms - thawed <= Self.recoveryBoundMs)
            }
            try await b.waitConnected(to: ["a", "c"], from: thawMarks.b, timeout: 40)
            measure("sleep.full-mesh", nowMs() - thawed)
            try await Self.traffic(between: a, and: b)
            for probe in [a, b, c] {
                #expect(!probe.sawDuplicatePeer, "\(probe.name) listed a peer twice")
            }
        }
    }
}
