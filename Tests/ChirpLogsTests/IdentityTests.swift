import Chirp
import ChirpTestSupport
import Foundation
import Logging
import Testing

@testable import ChirpLogs

/// The log channel with device identities: an in-process source that trusts `chirp logs --identity viewer` (a real
/// process, its identity in the test's own `XDG_CONFIG_HOME`) streams to it when its trust line grants `logs`, and
/// refuses the subscription, saying why, when it grants only other permissions.
@Suite(.serialized, .timeLimit(.minutes(10)))
struct IdentityTests {
    let chirp = binaryPath("chirp")

    @Test func aViewerNeedsTheLogsPermission() async throws {
        let scratch = NSTemporaryDirectory() + "chirp-logs-identity-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(
            atPath: scratch, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let environment: [String: String?] = [
            "XDG_CONFIG_HOME": scratch + "/config", "CHIRP_SECRET": "", "CHIRP_IDENTITY": ""
        ]
        let id = try await TestProcess(chirp, ["id", "viewer"], environment: environment, input: .closed)
        #expect(try await id.waitForExit() == 0, "\(id.standardError)")
        let viewerFingerprint = try Fingerprint(
            parsing: id.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines))

        let identity = try DeviceIdentity.loadOrCreate(name: "vault", directory: scratch + "/vault")
        let trustFile = identity.directory + "/trusted-peers"
        func trust(_ permissions: Set<Permission>) throws {
            var store = TrustStore()
            try store.add(TrustEntry(fingerprint: viewerFingerprint, label: "viewer", permissions: permissions))
            try store.text.write(toFile: trustFile, atomically: false, encoding: .utf8)
        }
        try trust([.read, .write])
        let service = uniqueServiceType()
        var configuration = LogSourceConfiguration(appName: "vault")
        configuration.serviceType = service
        configuration.transceiver.interface = .loopback
        configuration.security = .identity(identity, trust: .trustedPeers())
        let logs = try LogSource(configuration: configuration)
        let logger = Logger(label: "vault.app") { logs.handler(label: $0) }
        for n in 1...20 { logger.info("confidential \(n)") }
        try await logs.start()

        // Trusted, but not for logs: connected, the subscription refused with the reason.
        let refused = try await TestProcess(
            chirp, ["logs", "--service", service, "--interface", "lo", "--identity", "viewer"],
            environment: environment)
        #expect(
            await refused.waitForError(containing: "needs the 'logs' permission"),
            "\(refused.standardError)")
        #expect(refused.standardError.contains("holds read,write"), "\(refused.standardError)")
        #expect(!refused.lines.contains { $0.contains("confidential") }, "\(refused.lines)")
        await refused.stop()

        // Granted: the same viewer streams (the positive control).
        try trust([.logs])
        let allowed = try await TestProcess(
            chirp, ["logs", "--service", service, "--interface", "lo", "--identity", "viewer"],
            environment: environment)
        #expect(
            await allowed.waitFor { lines in lines.contains { $0.contains("confidential 20") } },
            "\(allowed.standardError)")
        await allowed.stop()
        await logs.stop()
    }
}
