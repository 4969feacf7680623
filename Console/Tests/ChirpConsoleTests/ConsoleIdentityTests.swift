import Chirp
import ChirpLogs
import ChirpTestSupport
import Foundation
import Logging
import NIOConcurrencyHelpers
import Testing

@testable import ChirpConsole

/// Device identities in the console: a source's fingerprint and whether the console trusts it, in `/api/sources` and
/// `/api/peers`. With real processes (`chirp-console --identity`, `logdemo --identity`) for a source the console
/// follows, and in this process for one its viewer refuses.
@Suite(.serialized, .timeLimit(.minutes(5))) struct ConsoleIdentityTests {
    /// A directory of the test's own (mode 0700, as identity directories want their parent), removed by `body`'s end.
    static func withScratch(_ body: (String) async throws -> Void) async throws {
        let scratch = TestSupport.temporaryDirectory()
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: scratch)
        try await withTeardown {
            try await body(scratch)
        } teardown: {
            try? FileManager.default.removeItem(atPath: scratch)
        }
    }

    /// Asks `port`'s API for `path` until `found` picks something out of the answer, for up to `seconds`.
    static func poll<T>(
        _ port: Int, _ path: String, seconds: Double = 30, _ found: ([String: Any]) -> T?
    ) async throws -> T? {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if let answer = try? await HTTPProbe(port: port).get(path).json(), let value = found(answer) {
                return value
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        return nil
    }

    static func sources(_ answer: [String: Any]) -> [[String: Any]] {
        answer["sources"] as? [[String: Any]] ?? []
    }

    @Test func aConsoleWithAnIdentityFollowsALogdemoWithOneAndShowsItsFingerprintAsTrusted() async throws {
        try await Self.withScratch { scratch in
            // Both identities made here first (the processes load them), so that the test knows the fingerprints.
            let shop = try DeviceIdentity.loadOrCreate(name: "shop", directory: scratch + "/shop")
            let console = try DeviceIdentity.loadOrCreate(name: "console", directory: scratch + "/console")
            let service = uniqueServiceType()
            let environment: [String: String?] = [
                "XDG_CONFIG_HOME": scratch + "/config", "CHIRP_SECRET": "", "CHIRP_IDENTITY": ""
            ]
            let started = NIOLockedValueBox<[TestProcess]>([])
            try await withTeardown {
                // logdemo trusts on first use (`--identity` in every CLI): the console is the first viewer it sees,
                // with the default permissions, logs among them.
                let app = try await TestProcess(
                    binaryPath("logdemo"),
                    [
                        "--name", "shop", "--plain", "--rate", "20", "--service", service, "--interface", "lo",
                        "--http-interval", "0", "--identity", shop.directory
                    ], environment: environment)
                started.withLockedValue { $0.append(app) }
                let (process, port) = try await ConsoleProcessTests.startConsole(
                    service: service, data: scratch + "/data", extra: ["--identity", console.directory],
                    environment: environment)
                started.withLockedValue { $0.append(process) }

                let source = try await Self.poll(port, "/api/sources") { answer in
                    Self.sources(answer).first {
                        $0["app"] as? String == "shop" && $0["trusted"] != nil && ($0["records"] as? Int ?? 0) > 0
                    }
                }
                let shown = try #require(source, "shop listed with its trust: \(process.transcript) \(app.transcript)")
                #expect(shown["fingerprint"] as? String == shop.fingerprint.description, "\(shown)")
                #expect(shown["trusted"] as? Bool == true, "\(shown)")
                #expect(shown["live"] as? Bool == true, "\(shown)")

                // The Peers tab, for the log sources' type: the same device, trusted.
                let peer = try await Self.poll(port, "/api/peers?service=\(service)") { answer in
                    (answer["peers"] as? [[String: Any]])?.first {
                        $0["fingerprint"] as? String == shop.fingerprint.description && $0["trusted"] != nil
                    }
                }
                #expect(peer?["trusted"] as? Bool == true, "\(String(describing: peer))")
            } teardown: {
                for process in started.withLockedValue({ $0 }) { await process.stop() }
            }
        }
    }

    @Test func aSourceTheConsolesViewerRefusesIsListedWithItsFingerprintAsNotTrusted() async throws {
        try await Self.withScratch { scratch in
            let service = uniqueServiceType()
            let sourceIdentity = try DeviceIdentity.loadOrCreate(name: "vault", directory: scratch + "/vault")
            let consoleIdentity = try DeviceIdentity.loadOrCreate(name: "console", directory: scratch + "/console")
            // The console trusts only the devices of its trust file, and it has none: it refuses the source.
            try await withSource(
                service, appName: "vault",
                configure: { $0.security = .identity(sourceIdentity, trust: .trustOnFirstUse()) }
            ) { source in
                let logger = Logger(label: "vault") { source.handler(label: $0) }
                logger.info("not for this console")
                try await source.start()
                try await RunningConsole.with(
                    serviceType: service,
                    configure: { $0.viewer.security = .identity(consoleIdentity, trust: .trustedPeers()) }
                ) { console in
                    let listed = try await Self.poll(console.port, "/api/sources") { answer in
                        Self.sources(answer).first { $0["app"] as? String == "vault" && $0["trusted"] != nil }
                    }
                    let shown = try #require(listed, "vault listed: \(console.log.entries.map(LogCapture.line(of:)))")
                    #expect(shown["fingerprint"] as? String == sourceIdentity.fingerprint.description, "\(shown)")
                    #expect(shown["trusted"] as? Bool == false, "\(shown)")
                    #expect(shown["records"] as? Int == 0, "nothing of it stored: \(shown)")
                    #expect(shown["live"] as? Bool == false, "\(shown)")
                }
            }
        }
    }

    @Test func anOpenSourceHasNeitherFingerprintNorTrust() async throws {
        let service = uniqueServiceType()
        try await withSource(service, appName: "open") { source in
            let logger = Logger(label: "open") { source.handler(label: $0) }
            logger.info("open record")
            try await source.start()
            try await RunningConsole.with(serviceType: service) { console in
                try await console.waitForRecords(1, query: "label=open")
                let listed = try await Self.poll(console.port, "/api/sources") { answer in
                    Self.sources(answer).first { $0["app"] as? String == "open" }
                }
                let shown = try #require(listed)
                #expect(shown["fingerprint"] == nil && shown["trusted"] == nil, "\(shown)")
            }
        }
    }
}
