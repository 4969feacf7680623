import Foundation
import Testing

/// Two hosts on a link that loses packets at random (`netns.sh loss`) or is slow (`netns.sh rate`), with the
/// library's default heartbeat: requests succeed, messages arrive once and in order, and no connection is dropped.
/// Docs/Reliability.md, "Impaired links", has the figures.
extension FaultTests {
    @Suite(.impair) struct LossTests {
        /// Two connected probes, a (on h1) and b (on h2), with the default heartbeat; then `percent` of the packets
        /// arriving at each host are dropped: that much loss each way.
        static func lossyPair(_ percent: Int, service letter: String) async throws -> (
            harness: Harness, a: ProbeProcess, b: ProbeProcess
        ) {
            let (harness, _, probes) = try await Harness.connected(hosts: 2, service: letter, [])
            do {
                for host in harness.hosts { try harness.run(["loss", host, String(percent)]) }
            } catch {
                harness.tearDown()
                throw error
            }
            return (harness, probes[0], probes[1])
        }

        /// Packets dropped so far by the loss rules of every host: the positive control that the link was lossy.
        static func dropped(_ harness: Harness) throws -> Int {
            try harness.hosts.reduce(0) { total, host in
                let counts = try harness.run(["dropped", host]).split(whereSeparator: \.isWhitespace)
                return total + counts.compactMap { Int($0) }.reduce(0, +)
            }
        }

        /// `count` requests from `from` to `to`, one after the other; all must succeed. Reports median and maximum.
        static func requests(
            _ count: Int, from: ProbeProcess, to: ProbeProcess, figure: String,
            sourceLocation: SourceLocation = #_sourceLocation
        ) async throws {
            let mark = from.mark
            from.command("request \(to.name) \(count)")
            let report = try await from.waitFor(from: mark, timeout: 300, "\(count) requests answered") {
                $0.event == "requested"
            }
            let latencies = (report.latencies ?? []).sorted()
            #expect(report.ok == count, "failed: \(report.errors ?? [])", sourceLocation: sourceLocation)
            if !latencies.isEmpty {
                measure("\(figure).request-median", latencies[latencies.count / 2])
                measure("\(figure).request-max", latencies[latencies.count - 1])
            }
        }

        static func noneDropped(_ probes: ProbeProcess..., sourceLocation: SourceLocation = #_sourceLocation) {
            for probe in probes {
                let dropped = probe.events.filter { $0.event == "peerDisconnected" }.compactMap(\.name)
                let closes = probe.standardError.split(separator: "\n").filter { line in
                    ["clos", "duplicate", "drop", "lost", "timed out"].contains { line.contains($0) }
                }
                #expect(
                    dropped.isEmpty, "\(probe.name) dropped \(dropped); its closes: \(closes)",
                    sourceLocation: sourceLocation)
            }
        }

        /// 5% loss each way: every request succeeds, 500 messages each way arrive in order and once.
        @Test(.netns) func fivePercentLossLosesNoRequestAndNoMessage() async throws {
            let (harness, a, b) = try await Self.lossyPair(5, service: "l")
            defer { harness.tearDown() }

            try await Self.requests(40, from: a, to: b, figure: "loss5")

            let start = nowMs()
            let (markA, markB) = (a.mark, b.mark)
            a.command("send b 500 100")
            b.command("send a 500 100")
            let sentA = try await a.waitFor(from: markA, "a's 500 sent") { $0.event == "sent" }
            let sentB = try await b.waitFor(from: markB, "b's 500 sent") { $0.event == "sent" }
            #expect(sentA.accepted == 500 && sentB.accepted == 500)
            let lastA = try await b.waitFor(timeout: 120, "a's last message at b") {
                $0.event == "message" && $0.from == "a" && $0.seq == sentA.lastSeq
            }
            let lastB = try await a.waitFor(timeout: 120, "b's last message at a") {
                $0.event == "message" && $0.from == "b" && $0.seq == sentB.lastSeq
            }
            measure("loss5.chat-1000", max(lastA.ms, lastB.ms) - start)
            for (receiver, sender, sent) in [(b, "a", sentA), (a, "b", sentB)] {
                let seqs = receiver.receivedSeqs(from: sender).filter { $0 >= (sent.firstSeq ?? 0) }
                #expect(
                    seqs == Array((sent.firstSeq ?? 0)...(sent.lastSeq ?? 0)),
                    "\(receiver.name) got gaps, duplicates or disorder")
            }
            let dropped = try Self.dropped(harness)
            measure("loss5.packets-dropped", dropped, "packets")
            #expect(dropped > 0, "the loss rules dropped nothing: the link was not lossy")
            Self.noneDropped(a, b)
        }

        /// 20% loss each way with the default heartbeat (0.5 s, 2.5 s): TCP resends, the heartbeat keeps the
        /// connection, every request succeeds.
        @Test(.netns) func twentyPercentLossDropsNoConnection() async throws {
            let (harness, a, b) = try await Self.lossyPair(20, service: "m")
            defer { harness.tearDown() }

            try await Self.requests(40, from: a, to: b, figure: "loss20")

            let dropped = try Self.dropped(harness)
            measure("loss20.packets-dropped", dropped, "packets")
            #expect(dropped > 0, "the loss rules dropped nothing: the link was not lossy")
            Self.noneDropped(a, b)
        }

        /// 10 Mbit/s each way: a 1 MiB message arrives, a request behind it is answered, no connection is dropped.
        @Test(.netns) func aSlowLinkCarriesALargeMessageWithoutADrop() async throws {
            let (harness, _, probes) = try await Harness.connected(hosts: 2, service: "n", [])
            defer { harness.tearDown() }
            let (a, b) = (probes[0], probes[1])
            for host in harness.hosts { try harness.run(["rate", host, "10mbit"]) }

            let start = nowMs()
            let sent = try await a.send(1, of: 1 << 20, to: b)
            measure("rate10.one-mib", nowMs() - start)
            #expect(sent.accepted == 1)
            try await Self.requests(10, from: a, to: b, figure: "rate10")
            Self.noneDropped(a, b)
        }

        /// 10 Mbit/s each way: requests sent right behind a 4 MiB message (about 3.4 s of the link) are answered while
        /// it is still on its way: it goes out in parts of 128 KiB, and the requests' frames go ahead of its remaining
        /// parts (Docs/Protocol.md section 3).
        @Test(.netns) func aRequestBehindALargeMessageOnASlowLinkIsNotHeldUpByIt() async throws {
            let (harness, _, probes) = try await Harness.connected(hosts: 2, service: "q", [])
            defer { harness.tearDown() }
            let (a, b) = (probes[0], probes[1])
            for host in harness.hosts { try harness.run(["rate", host, "10mbit"]) }

            let (markA, markB) = (a.mark, b.mark)
            let start = nowMs()
            a.command("send b 1 \(4 << 20)")
            let sent = try await a.waitFor(from: markA, "the large message queued") { $0.event == "sent" }
            #expect(sent.accepted == 1)
            // The link's own round trip meanwhile, the floor of any request's: connection attempts from h1 to a closed
            // port of h2 (SYN out behind the message's packets in h1's rate limit, RST back), beside the requests.
            let target = try harness.address(harness.hosts[1])
            let floor = Task.detached { try harness.run(["exec", harness.hosts[0], "python3", "-c", Self.rtt, target]) }
            a.command("request b 5")
            let report = try await a.waitFor(from: markA, timeout: 120, "5 requests answered") {
                $0.event == "requested"
            }
            let floors = try await floor.value.split(whereSeparator: \.isWhitespace).compactMap { Double($0) }.sorted()
            let arrived = try await b.waitFor(from: markB, timeout: 120, "the large message at b") {
                $0.event == "message" && $0.from == "a" && $0.seq == sent.lastSeq
            }
            let latencies = (report.latencies ?? []).sorted()
            #expect(report.ok == 5, "failed: \(report.errors ?? [])")
            // Positive control: the requests were answered while the message was still in transit.
            #expect(report.ms < arrived.ms, "the requests were answered only after the large message arrived")
            #expect((latencies.last ?? .max) < 1500, "a request waited \(latencies.last ?? -1) ms behind the message")
            measure("rate10.parts.four-mib", arrived.ms - start)
            if !latencies.isEmpty {
                measure("rate10.parts.request-median", latencies[latencies.count / 2])
                measure("rate10.parts.request-max", latencies[latencies.count - 1])
            }
            if !floors.isEmpty {
                measure("rate10.parts.link-rtt-median", Int(floors[floors.count / 2]))
                measure("rate10.parts.link-rtt-max", Int(floors[floors.count - 1]))
            }
            Self.noneDropped(a, b)
        }

        /// Times 5 TCP connection attempts to a closed port of the address in `argv[1]`, 0.2 s apart: each is one
        /// round trip of the link (SYN, RST). Prints the times in ms.
        static let rtt = """
            import socket, sys, time
            times = []
            for _ in range(5):
                s = socket.socket(socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET)
                s.settimeout(5)
                start = time.monotonic()
                try:
                    s.connect((sys.argv[1], 9))
                except OSError:
                    pass
                times.append((time.monotonic() - start) * 1000)
                s.close()
                time.sleep(0.2)
            print(" ".join("%.1f" % t for t in times))
            """
    }
}

extension Trait where Self == ConditionTrait {
    /// Runs the test only where `netns.sh available impair` says the impairments (nftables) work.
    static var impair: Self {
        .enabled(if: Impairments.skipReason == nil, Comment(rawValue: Impairments.skipReason ?? ""))
    }
}

/// Why the impairment tests do not run here, or `nil` when they do.
enum Impairments {
    static let skipReason: String? = {
        guard Harness.isEnabled else { return Harness.skipReason }
        let result = Harness.script(["available", "impair"])
        guard result.status == 0 else {
            return result.output.split(separator: "\n").first.map(String.init) ?? "netns.sh available impair failed"
        }
        return nil
    }()
}
