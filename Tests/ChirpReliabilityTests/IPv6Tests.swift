import Foundation
import Testing

/// Hosts with IPv6 (`netns.sh up N --ip MODE`): link-local addresses only, global (unique local) IPv6 without IPv4, and
/// dual stack. Peers find each other, connect (link-local: with the scope of the interface), exchange messages both
/// ways, and a command gets its reply (listrctl to listr); `chirp browse` prints a link-local address the way `ping`
/// takes it. Figures: `measure ipv6.MODE.connect`, from the first probe's start to a full mesh (Docs/Reliability.md,
/// "IPv6").
extension FaultTests {
    @Suite struct IPv6Tests {
        @Test(.netns, arguments: ["link-local", "global", "dual"])
        func peersFindConnectAndTalkOverIPv6(mode: String) async throws {
            // Dual stack on 4 hosts (6 pairs): each pair's resolves must find an address that connects, whichever
            // family answers first.
            let harness = try Harness(hosts: mode == "dual" ? 4 : 2, ip: mode)
            defer { harness.tearDown() }

            // Positive control: the link is what it says. IPv6-only hosts have no IPv4 address on eth0.
            let ipv4 = try harness.run(["exec", "h1", "ip", "-4", "-o", "addr", "show", "dev", "eth0"])
            let addresses = try harness.addresses("h1")
            #expect(addresses.contains { $0.hasPrefix("fe80:") && $0.hasSuffix("%eth0") }, "\(addresses)")
            if mode == "dual" {
                #expect(ipv4.contains("inet "), "\(ipv4)")
            } else {
                #expect(!ipv4.contains("inet "), "h1 has IPv4 on eth0 in \(mode) mode: \(ipv4)")
                #expect(addresses.allSatisfy { $0.contains(":") }, "\(addresses)")
            }

            let type = uniqueServiceType("6")
            let started = nowMs()
            let probes = try await harness.connectedProbes(service: type, timeout: 30)
            measure("ipv6.\(mode).connect", nowMs() - started)
            let (a, b) = (probes[0], probes[1])
            for (sender, receiver) in [(a, b), (b, a)] {
                try await sender.send(20, to: receiver)
                let seqs = receiver.receivedSeqs(from: sender.name)
                #expect(seqs == Array(seqs.sorted()) && Set(seqs).count == seqs.count && seqs.count == 20, "\(seqs)")
            }

            // A command and its reply: listr on h1, listrctl on h2. Its store in a folder of the test's own, removed
            // whole: listr keeps a lock file beside the store (.NAME.lock), which a killed listr leaves.
            let folder = FileManager.default.temporaryDirectory
                .appendingPathComponent("chirp-ipv6-\(harness.prefix)-\(mode)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let store = folder.appendingPathComponent("store.json").path
            let listType = uniqueServiceType("l")
            let listr = try await harness.start(
                on: "h1", [binaryPath("listr"), "--store", store, "--name", "kitchen", "--service", listType],
                name: "listr")
            defer { listr.kill() }
            #expect(await listr.waitForError(containing: "ready:", timeout: .seconds(20)), "\(listr.transcript)")
            let add = ["item", "add", "milk", "--peer", "kitchen", "--service", listType, "--timeout", "30"]
            let ctl = try await harness.start(on: "h2", [binaryPath("listrctl")] + add, name: "listrctl")
            #expect(try await ctl.waitForExit(timeout: .seconds(40)) == 0, "\(ctl.transcript)\n\(listr.transcript)")

            // chirp browse shows the address a peer dials: a link-local one with its scope, in brackets.
            if mode == "link-local" {
                let browse = try await harness.start(
                    on: "h2", [binaryPath("chirp"), "browse", type, "--once", "--timeout", "5"], name: "browse")
                #expect(try await browse.waitForExit(timeout: .seconds(20)) == 0, "\(browse.transcript)")
                #expect(browse.standardOutput.contains("[fe80:"), "\(browse.transcript)")
                #expect(browse.standardOutput.contains("%eth0]:"), "\(browse.transcript)")
            }
        }
    }
}
