import Foundation
import Testing

/// Two subnets joined by a router host whose avahi-daemon reflects mDNS between them (`enable-reflector=yes`), as
/// Docs/Deployment.md describes: a peer on one subnet finds, connects to and messages a peer on the other.
extension FaultTests {
    @Suite struct SubnetTests {
        @Test(.netns) func aPeerOnTheOtherSubnetIsFoundThroughAReflectorAndReached() async throws {
            let harness = try Harness(hosts: 2, subnets: 2)
            defer { harness.tearDown() }
            // h1 and h2 are on different subnets: only the router joins them.
            let (first, second) = (try harness.address("h1"), try harness.address("h2"))
            #expect(
                first.split(separator: ".").prefix(3) != second.split(separator: ".").prefix(3),
                "\(first) and \(second)")

            let type = uniqueServiceType("s")
            let a = try await harness.probe(on: "h1", name: "a", service: type)
            let b = try await harness.probe(on: "h2", name: "b", service: type)
            try await a.waitConnected(to: ["b"], timeout: 40)
            try await b.waitConnected(to: ["a"], timeout: 40)

            // Both ways, every message, in order.
            for (sender, receiver, from) in [(a, b, "a"), (b, a, "b")] {
                let mark = sender.mark
                sender.command("send \(receiver.name) 50 100")
                let sent = try await sender.waitFor(from: mark, "50 sent to \(receiver.name)") { $0.event == "sent" }
                #expect(sent.accepted == 50)
                try await receiver.waitFor("\(from)'s 50th message") {
                    $0.event == "message" && $0.from == from && $0.seq == sent.lastSeq
                }
                let seqs = receiver.events.filter { $0.event == "message" && $0.from == from }.compactMap(\.seq)
                #expect(seqs == Array(seqs.sorted()) && Set(seqs).count == seqs.count && seqs.count == 50, "\(seqs)")
            }
        }
    }
}
