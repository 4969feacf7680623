import Foundation
import Testing

@testable import Chirp
@testable import ChirpDiscovery

/// The two discovery backends on Linux: Avahi's own client library (the default) and the `dns_sd` compatibility
/// library. The live suites run against the default here and again under `CHIRP_DISCOVERY=dns-sd` in `make test`
/// (`make dnssd-test`).
@Suite(.timeLimit(.minutes(5))) struct DiscoveryBackendChoiceTests {
    @Test func anExplicitChoiceResolvesToItself() {
        #expect(Configuration.DiscoveryBackend.dnsSD.resolved == .dnsSD)
        #if os(Linux)
        #expect(Configuration.DiscoveryBackend.avahi.resolved == .avahi)
        #else
        #expect(Configuration.DiscoveryBackend.avahi.resolved == .dnsSD)  // not built on macOS
        #endif
        #expect(Configuration.DiscoveryBackend.automatic.resolved != .automatic)
        #expect(Configuration().discoveryBackend == .automatic)
    }

    @Test func avahiErrorsReadLikeTheDNSSDOnes() {
        #if os(Linux)
        let gone = DNSSDError(avahiCode: -26, operation: "avahi_service_browser_new")  // AVAHI_ERR_NO_DAEMON
        #expect(gone.daemonUnavailable)
        #expect(gone.description.contains("no DNS-SD daemon answered"))
        let tooMany = DNSSDError(avahiCode: -17, operation: "avahi_service_resolver_new")  // AVAHI_ERR_TOO_MANY_OBJECTS
        #expect(!tooMany.daemonUnavailable)
        #expect(tooMany.description == "avahi_service_resolver_new failed: Too many objects (-17)")
        #endif
    }
}

extension LiveTests {
    /// Counts the system-bus connections of a real process that runs several peers: with Avahi's own client library,
    /// one for the whole process; with the compatibility library (the control), one per browse, resolve and
    /// registration.
    @Suite struct DaemonConnectionTests {
        static var canCount: Bool { FileManager.default.isExecutableFile(atPath: "/usr/bin/dbus-send") }

        @Test(.enabled(if: canCount, "needs dbus-send"))
        func oneBusConnectionPerProcessWhateverItBrowsesAndResolves() async throws {
            #if os(Linux)
            let native = try await busConnections(ofPeers: 6, backend: .avahi)
            #expect(native == 1)
            // The control: the same six peers through the compatibility library hold many.
            let compat = try await busConnections(ofPeers: 6, backend: .dnsSD)
            #expect(compat >= 12, "a registration and a browse per peer at least")
            #endif
        }

        /// Runs `peers` mesh peers in one `chirp-load` process until they are all connected, and returns how many
        /// connections that process holds on the system bus.
        private func busConnections(ofPeers peers: Int, backend: Configuration.DiscoveryBackend) async throws -> Int {
            let load = try await TestProcess(
                binaryPath("chirp-load"),
                [
                    "mesh", "--service", uniqueServiceType(), "--count", "\(peers)", "--expect", "\(peers - 1)",
                    "--interface", "lo",
                    "--timeout", "120"
                ],
                name: "chirp-load (\(backend))",
                environment: [Configuration.DiscoveryBackend.environmentVariable: backend.rawValue])
            defer { load.kill() }
            try await load.waitForLine(timeout: .seconds(90), "a full mesh") { $0.contains("\"type\":\"full\"") }
            return try await Self.systemBusConnections(of: load.pid)
        }

        /// The unique names on the system bus whose process is `pid` (the bus's own answer, through `dbus-send`).
        static func systemBusConnections(of pid: Int32) async throws -> Int {
            let names = try await dbusSend(["org.freedesktop.DBus.ListNames"]).split(separator: "\n").compactMap {
                line -> String? in
                let text = line.trimmingCharacters(in: .whitespaces)
                guard text.hasPrefix("string \":") else { return nil }
                return String(text.dropFirst("string \"".count).dropLast())
            }
            var count = 0
            for name in names {
                // A connection may close between the two calls: it is not ours to count then.
                guard
                    let reply = try? await dbusSend([
                        "org.freedesktop.DBus.GetConnectionUnixProcessID", "string:\(name)"
                    ])
                else { continue }
                if reply.contains("uint32 \(pid)\n") || reply.hasSuffix("uint32 \(pid)") { count += 1 }
            }
            return count
        }

        private static func dbusSend(_ arguments: [String]) async throws -> String {
            let process = try await TestProcess(
                "/usr/bin/dbus-send",
                ["--system", "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus"] + arguments,
                input: .closed)
            guard try await process.waitForExit() == 0 else { throw DBusSendFailed() }
            return process.standardOutput
        }

        struct DBusSendFailed: Error {}
    }
}
