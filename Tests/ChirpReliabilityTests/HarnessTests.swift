import Foundation
import Testing

/// The harness itself: hosts see each other's services over the bridge, and nothing of them reaches the root
/// namespace.
extension FaultTests {
    @Suite struct HarnessTests {
        /// Interface names of the namespace this process runs in (the root one).
        static func rootInterfaces() throws -> Set<String> {
            let text = try String(contentsOfFile: "/proc/net/dev", encoding: .utf8)
            return Set(
                text.split(separator: "\n").dropFirst(2).compactMap { line in
                    line.split(separator: ":").first.map { $0.trimmingCharacters(in: .whitespaces) }
                })
        }

        @Test(.netns) func servicesCrossTheBridgeAndNeverReachTheRootNamespace() async throws {
            let rootLinksBefore = try Self.rootInterfaces()
            let harness = try Harness(hosts: 2)
            defer { harness.tearDown() }
            let type = "_\(uniqueServiceType("h"))._tcp"
            let publisher = try await harness.start(
                on: "h1", ["avahi-publish", "-s", "x", type, "1234"], name: "publish x")
            defer { publisher.kill() }

            // h2 resolves it at h1's address, through real multicast on the bridge.
            let h1 = try harness.address("h1")
            let browser = try await harness.start(on: "h2", ["avahi-browse", "-r", "-p", type], name: "browse on h2")
            defer { browser.kill() }
            let resolved = try await browser.waitForLine(timeout: .seconds(20), "x resolved") {
                $0.hasPrefix("=;eth0;IPv4;x;")
            }
            #expect(resolved.contains(";\(h1);1234;"), "\(resolved)")

            // The root namespace: no interface of the harness, and its avahi-daemon (if any) does not see the service.
            let appeared = try Self.rootInterfaces().subtracting(rootLinksBefore)
            #expect(
                appeared.isDisjoint(with: ["br0", "eth0", "h1", "h2"]),
                "the harness put \(appeared) in the root namespace")
            let root = try await TestProcess("/usr/bin/avahi-browse", ["-t", "-p", type], input: .closed)
            _ = try await root.waitForExit()
            let output = root.standardOutput
            #expect(!output.contains(";x;"), "the root namespace's avahi-daemon saw the service: \(output)")
        }
    }
}
