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
            let publisher = try harness.start(on: "h1", ["avahi-publish", "-s", "x", type, "1234"], name: "publish x")
            defer { publisher.terminate() }

            // h2 resolves it at h1's address, through real multicast on the bridge.
            let h1 = try harness.address("h1")
            let browser = try harness.start(on: "h2", ["avahi-browse", "-r", "-p", type], name: "browse on h2")
            defer { browser.terminate() }
            let resolved = try await browser.waitForLine(timeout: 20, "x resolved") { $0.hasPrefix("=;eth0;IPv4;x;") }
            #expect(resolved.line.contains(";\(h1);1234;"), "\(resolved.line)")

            // The root namespace: no interface of the harness, and its avahi-daemon (if any) does not see the service.
            let appeared = try Self.rootInterfaces().subtracting(rootLinksBefore)
            #expect(
                appeared.isDisjoint(with: ["br0", "eth0", "h1", "h2"]),
                "the harness put \(appeared) in the root namespace")
            let root = Process()
            root.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            root.arguments = ["avahi-browse", "-t", "-p", type]
            let pipe = Pipe()
            root.standardOutput = pipe
            root.standardError = FileHandle.nullDevice
            try root.run()
            let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            root.waitUntilExit()
            #expect(!output.contains(";x;"), "the root namespace's avahi-daemon saw the service: \(output)")
        }
    }
}
