import Foundation
import Testing

/// Hosts that advertise the service type (with a Chirp TXT record) but do not speak Chirp.
extension FaultTests {
    @Suite struct BadPeerTests {
        /// A tiny TCP server: `garbage` writes random bytes to every connection, `silent` accepts and never reads or
        /// writes. It prints one JSON line per accepted connection, so a test can see how often it is dialed.
        static let badServer = """
            import json, os, socket, sys, time
            mode, port = sys.argv[1], int(sys.argv[2])
            server = socket.socket()
            server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            server.bind(("0.0.0.0", port))
            server.listen(64)
            print(json.dumps({"event": "listening", "port": port}), flush=True)
            held = []
            while True:
                connection, address = server.accept()
                print(json.dumps({"event": "accept", "ms": int(time.time() * 1000), "from": address[0]}), flush=True)
                if mode == "garbage":
                    try:
                        connection.sendall(os.urandom(4096))
                    except OSError:
                        pass
                held.append(connection)
            """

        /// Starts a bad server on `host` and advertises it as a Chirp peer of `type` named `name` (at `port`, whether or
        /// not anything listens there).
        static func advertise(_ harness: Harness, on host: String, name: String, type: String, port: Int) async throws
            -> TestProcess
        {
            try await harness.start(
                on: host,
                [
                    "avahi-publish", "-s", name, "_\(type)._tcp", String(port),
                    "id=bad-\(name)-\(UUID().uuidString.prefix(8))", "name=\(name)", "pv=1"
                ], name: "publish \(name)")
        }

        static func server(_ harness: Harness, on host: String, mode: String, port: Int) async throws -> TestProcess {
            let server = try await harness.start(
                on: host, ["python3", "-c", badServer, mode, String(port)], name: "\(mode) server")
            try await server.waitForLine("listening") { $0.contains("listening") }
            return server
        }

        /// Accept times (ms) printed by a bad server, of connections from `address`.
        static func accepts(_ server: TestProcess, from address: String) -> [Int] {
            server.lines.compactMap { line -> Int? in
                guard line.contains("\"accept\""), let data = line.data(using: .utf8),
                    let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
                    object["from"] as? String == address
                else { return nil }
                return object["ms"] as? Int
            }
        }

        @Test(.netns) func badPeersAreSkippedAndRetriedWithBackoffWithoutDelayingGoodOnes() async throws {
            let harness = try Harness(hosts: 4)
            defer { harness.tearDown() }
            let type = uniqueServiceType("b")

            // h2: a server speaking garbage, and an advertisement of a port where nothing listens.
            // h3: a listener that accepts and never reads.
            let garbage = try await Self.server(harness, on: "h2", mode: "garbage", port: 7001)
            let silent = try await Self.server(harness, on: "h3", mode: "silent", port: 7003)
            let publishers = [
                try await Self.advertise(harness, on: "h2", name: "garbage", type: type, port: 7001),
                try await Self.advertise(harness, on: "h2", name: "closed", type: type, port: 7002),
                try await Self.advertise(harness, on: "h3", name: "silent", type: type, port: 7003)
            ]
            defer {
                publishers.forEach { $0.kill() }
                garbage.kill()
                silent.kill()
            }

            // A good peer comes up among them: it is dialed by (and dials) the bad ones.
            let startedA = nowMs()
            let a = try await harness.probe(on: "h1", name: "a", service: type, ["--log-level", "debug"])
            try await a.waitReady()
            try await a.waitFor("a sees the garbage peer") { $0.is("peerAdded", name: "garbage") }
            try await a.waitFor("a sees the silent peer") { $0.is("peerAdded", name: "silent") }

            // Another good peer: connects as fast as without bad peers (first connection well within 10 s).
            let startedB = nowMs()
            let b = try await harness.probe(on: "h4", name: "b", service: type, ["--log-level", "debug"])
            let connected = try await b.waitFor(timeout: 30, "b connected to a") { $0.is("peerConnected", name: "a") }
            measure("bad.good-peer-connects", connected.ms - startedB)
            #expect(
                connected.ms - startedB <= 10_000,
                "b took \(connected.ms - startedB) ms to connect to a among bad peers")
            try await a.waitConnected(to: ["b"])

            // Messages between the good peers flow while the bad ones are retried.
            try await a.send(200, to: b)

            // Let the retries run until a has dialed the garbage server five times (four gaps to compare) and the silent
            // one twice (its first handshake timed out), then look at how a treated the bad peers.
            let aAddress = try harness.address("h1")
            try await waitUntil(.seconds(90), "five dials of the garbage peer and two of the silent one from a") {
                Self.accepts(garbage, from: aAddress).filter { $0 >= startedA }.count >= 5
                    && Self.accepts(silent, from: aAddress).filter { $0 >= startedA }.count >= 2
            }
            let mark = a.mark
            a.command("peers")
            let peers = try await a.waitFor(from: mark, "peers") { $0.event == "peers" }
            #expect(peers.connected == ["b"], "a is connected to \(peers.connected ?? [])")
            #expect(!(peers.names ?? []).contains("closed"), "a still lists the advertisement where nothing listens")

            // Logged reasons: garbage is a protocol error, the silent one a handshake that timed out, the closed port a
            // refused connect.
            let log = a.standardError
            let garbageAddress = try harness.address("h2")
            let silentAddress = try harness.address("h3")
            let garbageLines = log.split(separator: "\n").filter {
                $0.contains(garbageAddress) || $0.contains("garbage")
            }
            let silentLines = log.split(separator: "\n").filter { $0.contains(silentAddress) || $0.contains("silent") }
            #expect(
                garbageLines.contains {
                    $0.contains("dial failed") || $0.contains("dropped") || $0.contains("refused")
                },
                "no reason logged for the garbage peer: \(garbageLines.suffix(10))")
            #expect(
                silentLines.contains {
                    $0.contains("dial failed") || $0.contains("dropped") || $0.contains("timed out")
                },
                "no reason logged for the silent peer: \(silentLines.suffix(10))")

            // Backoff: the gaps between dials of the garbage server grow; a handful of dials, not a loop.
            // Dials from a only (b dials them too).
            let garbageDials = Self.accepts(garbage, from: aAddress).filter { $0 >= startedA }
            let gaps = zip(garbageDials.dropFirst(), garbageDials).map { $0 - $1 }
            measure("bad.garbage-dials", garbageDials.count, "dials")
            if let last = gaps.last { measure("bad.garbage-last-gap", last) }
            measure("bad.garbage-gaps", gaps.count)
            FileHandle.standardError.write(Data("garbage dial gaps (ms): \(gaps)\n".utf8))
            #expect(garbageDials.count >= 3, "the garbage peer was not retried: \(garbageDials)")
            #expect(
                garbageDials.count <= 20, "the garbage peer was retried without backoff: \(garbageDials.count) dials")
            if gaps.count >= 3 { #expect(gaps.last ?? 0 > gaps.first ?? 0, "gaps between dials do not grow: \(gaps)") }
            let silentDials = Self.accepts(silent, from: aAddress).filter { $0 >= startedA }
            measure("bad.silent-dials", silentDials.count, "dials")
            #expect(silentDials.count >= 1 && silentDials.count <= 20, "silent peer dials: \(silentDials)")

            // The good peers are still served: another round trip of messages.
            try await b.send(100, to: a)
            #expect(Set(a.receivedSeqs(from: "b")).count == 100)
        }
    }
}
