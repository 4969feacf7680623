import Chirp
import Foundation
import Testing

extension ChirpCLITests {
    @Suite struct Ping {
        @Test func reportsTheNumberOfRepliesAskedFor() async throws {
            let type = uniqueServiceType()
            try await withPeer(type, name: "target") { peer in
                let (status, ping) = try await runChirp([
                    "ping", type, "--peer", "target", "-c", "3", "-i", "0.1", "--interface", "lo"
                ])
                #expect(status == 0, "\(ping.transcript)")
                let lines = ping.lines
                #expect(
                    lines.first?.hasPrefix("PING target (127.0.0.1:\(peer.port ?? -1)) on _\(type)._tcp") == true,
                    "\(ping.transcript)")
                #expect(
                    lines.filter { $0.hasPrefix("pong from target: seq=") && $0.hasSuffix(" ms") }.count == 3,
                    "\(ping.transcript)")
                #expect(lines.contains("--- target ping statistics ---"))
                #expect(
                    lines.contains { $0.hasPrefix("3 pings transmitted, 3 pongs received, 0% loss, time ") },
                    "\(ping.transcript)")
                #expect(lines.last?.hasPrefix("rtt min/avg/max/stddev = ") == true, "\(ping.transcript)")
            }
        }

        @Test func connectSkipsDiscovery() async throws {
            let type = uniqueServiceType()
            try await withPeer(type, name: "direct") { peer in
                let port = try #require(peer.port)
                let (status, ping) = try await runChirp([
                    "ping", type, "--connect", "127.0.0.1:\(port)", "-c", "2", "-i", "0.05", "--interface", "lo"
                ])
                #expect(status == 0, "\(ping.transcript)")
                #expect(
                    ping.lines.contains { $0.hasPrefix("2 pings transmitted, 2 pongs received") },
                    "\(ping.transcript)")
            }
        }
    }
}
