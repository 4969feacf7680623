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
            let probes = try await harness.connectedProbes(service: type, timeout: 40)
            let (a, b) = (probes[0], probes[1])

            // Both ways, every message, in order.
            for (sender, receiver) in [(a, b), (b, a)] {
                try await sender.send(50, to: receiver)
                let seqs = receiver.receivedSeqs(from: sender.name)
                #expect(seqs == Array(seqs.sorted()) && Set(seqs).count == seqs.count && seqs.count == 50, "\(seqs)")
            }
        }
    }
}
