import Chirp
import ChirpTestSupport
import Foundation
import Logging
import NIOConcurrencyHelpers
import Testing

@testable import ChirpLogs

/// The log channel with a shared secret: `logdemo`, in-process sources, `chirp logs` as a real process and in-process
/// viewers, over the real avahi-daemon (loopback). The right secret streams; a missing or wrong one gets nothing, a
/// clear message and exit status 4; the secret never shows in any output or log.
@Suite(.serialized, .timeLimit(.minutes(10)))
struct SecretTests {
    let chirp = binaryPath("chirp")
    let logdemo = binaryPath("logdemo")

    static func randomSecret() -> String { "s3cret-" + UUID().uuidString }

    /// A file holding `secret`, readable by its owner only.
    static func secretFile(_ secret: String) throws -> String {
        let path = NSTemporaryDirectory() + "chirp-logs-secret-" + UUID().uuidString
        #expect(
            FileManager.default.createFile(
                atPath: path, contents: Data(secret.utf8), attributes: [.posixPermissions: 0o600]))
        return path
    }

    /// An in-process source on loopback logging `confidential N` records, its own network messages going to `capture`.
    func startSource(_ service: String, secret: String?, capture: LogCapture) async throws -> LogSource {
        var configuration = LogSourceConfiguration(appName: "vault")
        configuration.serviceType = service
        configuration.transceiver.interface = .loopback
        configuration.networkLogger = capture.logger("vault.network")
        if let secret { configuration.security = .sharedSecret(try SharedSecret(secret)) }
        let logs = try LogSource(configuration: configuration)
        let logger = Logger(label: "vault.app") { logs.handler(label: $0) }
        for n in 1...20 { logger.info("confidential \(n)") }
        try await logs.start()
        return logs
    }

    /// `chirp logs` on `service` (loopback), with `environment` (CHIRP_SECRET is empty unless given).
    func viewer(_ service: String, _ arguments: [String], environment: [String: String?] = [:]) async throws
        -> TestProcess
    {
        try await TestProcess(
            chirp, ["logs", "--service", service, "--interface", "lo"] + arguments,
            environment: ["CHIRP_SECRET": ""].merging(environment) { $1 })
    }

    @Test("the right secret: logdemo (CHIRP_SECRET) streams to chirp logs (--secret-file, or CHIRP_SECRET)")
    func rightSecretStreamsEndToEnd() async throws {
        let service = uniqueServiceType()
        let secret = Self.randomSecret()
        let file = try Self.secretFile(secret)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let demo = try await TestProcess(
            logdemo, ["--service", service, "--interface", "lo", "--name", "vault", "--plain", "--rate", "50"],
            environment: ["CHIRP_SECRET": secret])
        #expect(
            await demo.waitFor { $0.contains { $0.contains("streaming logs on port") } },
            "logdemo: \(demo.standardError)")
        #expect(demo.lines.first?.contains("shared secret from CHIRP_SECRET") == true, "\(demo.lines)")

        // Following, the secret from a file.
        let view = try await viewer(service, ["--json", "--secret-file", file])
        #expect(await view.waitFor { TestSupport.sequences($0).count >= 50 }, "viewer stderr: \(view.standardError)")
        let seqs = TestSupport.sequences(view.lines)
        let first = try #require(seqs.first)
        #expect(seqs == Array(first..<(first + seqs.count)), "contiguous, each record once")
        #expect(!view.lines.contains { $0.contains(#""event":"refused""#) })
        #expect(!view.standardError.contains("refused"), "\(view.standardError)")

        // The history, then exit, the secret from the environment.
        let once = try await viewer(
            service, ["--no-follow", "--wait", "2", "vault"], environment: ["CHIRP_SECRET": secret])
        let status = try? await once.waitForExit(timeout: .seconds(30))
        #expect(status == 0, "chirp logs --no-follow exited \(String(describing: status)): \(once.standardError)")
        #expect(once.lines.contains { $0.contains("vault[") && $0.contains("tick ") }, "\(once.lines.prefix(3))")

        await view.stop()
        await demo.stop()
        for process in [demo, view, once] {
            #expect(
                !process.lines.joined().contains(secret) && !process.standardError.contains(secret),
                "\(process.name) showed the secret")
        }
    }

    @Test("without the secret chirp logs gets nothing, says the app requires one, and exits 4 (following or not)")
    func missingSecretIsRefusedWithStatus4() async throws {
        let service = uniqueServiceType()
        let secret = Self.randomSecret()
        let capture = LogCapture()
        let logs = try await startSource(service, secret: secret, capture: capture)

        for arguments in [["--json"], ["--no-follow", "--wait", "10"], ["vault", "--http"]] {
            let view = try await viewer(service, arguments)
            let status = try? await view.waitForExit(timeout: .seconds(30))
            #expect(status == 4, "chirp logs \(arguments) exited \(String(describing: status)): \(view.standardError)")
            #expect(view.standardError.contains("this app (vault["), "\(view.standardError)")
            #expect(view.standardError.contains("requires a shared secret"), "\(view.standardError)")
            #expect(
                view.standardError.contains("CHIRP_SECRET") && view.standardError.contains("--secret-file"),
                "\(view.standardError)"
            )
            #expect(
                !view.lines.contains { $0.contains(#""event":"record""#) || $0.contains("confidential") },
                "\(view.lines)")
            if arguments == ["--json"] {
                let notice = TestSupport.objects(view.lines).first { $0["event"] as? String == "refused" }
                #expect(notice?["kind"] as? String == "secret-required", "\(view.lines)")
                #expect(notice?["app"] as? String == "vault")
            }
            #expect(!view.lines.joined().contains(secret) && !view.standardError.contains(secret))
        }
        await logs.stop()
        #expect(!capture.text.contains(secret))
    }

    @Test("with a wrong secret chirp logs gets nothing, says the secret does not match, and exits 4; the app logs why")
    func wrongSecretIsRefusedWithStatus4() async throws {
        let service = uniqueServiceType()
        let secret = Self.randomSecret()
        let wrong = Self.randomSecret()
        let capture = LogCapture()
        let logs = try await startSource(service, secret: secret, capture: capture)
        let port = try #require(logs.port)

        for arguments in [["--json"], ["--connect", "127.0.0.1:\(port)"], ["--connect", "[::1]:\(port)"]] {
            let view = try await viewer(service, arguments, environment: ["CHIRP_SECRET": wrong])
            let status = try? await view.waitForExit(timeout: .seconds(30))
            #expect(status == 4, "chirp logs \(arguments) exited \(String(describing: status)): \(view.standardError)")
            #expect(view.standardError.contains("shared secret does not match"), "\(view.standardError)")
            #expect(view.standardError.contains("CHIRP_SECRET"), "\(view.standardError)")
            #expect(
                !view.lines.contains { $0.contains(#""event":"record""#) || $0.contains("confidential") },
                "\(view.lines)")
            for text in [view.lines.joined(), view.standardError] {
                #expect(!text.contains(secret) && !text.contains(wrong))
            }
        }
        // The app said why it refused the viewers, and never the secrets.
        try await capture.waitForLine(containing: "refused: shared secret does not match")
        await logs.stop()
        #expect(!capture.text.contains(secret) && !capture.text.contains(wrong))
        #expect(logs.statistics.viewers == 0)
    }

    @Test("a viewer with a secret and an app without one: refused with status 4, and told to drop the secret")
    func secretAgainstAnOpenAppIsRefused() async throws {
        let service = uniqueServiceType()
        let capture = LogCapture()
        let logs = try await startSource(service, secret: nil, capture: capture)
        let view = try await viewer(service, [], environment: ["CHIRP_SECRET": Self.randomSecret()])
        let status = try? await view.waitForExit(timeout: .seconds(30))
        #expect(status == 4, "exited \(String(describing: status)): \(view.standardError)")
        #expect(view.standardError.contains("does not use a shared secret"), "\(view.standardError)")
        #expect(view.lines.isEmpty, "\(view.lines)")
        await logs.stop()
    }

    @Test(
        "LogViewer without the secret: a refusal event, no record, LogViewerError.refused; the source logs the refusal")
    func inProcessViewerIsToldWhy() async throws {
        let service = uniqueServiceType()
        let secret = Self.randomSecret()
        let capture = LogCapture()
        let logs = try await startSource(service, secret: secret, capture: capture)

        var configuration = LogViewerConfiguration()
        configuration.serviceType = service
        configuration.transceiver.interface = .loopback
        configuration.transceiver.peerName = "snoop"
        let events = ViewerEvents()
        let following = LogViewer(configuration: configuration)
        let refused = try await withThrowingTaskGroup(of: Void.self) { group -> LogSourceRefusal? in
            group.addTask { try await following.run { event in events.append(event) } }
            defer { group.cancelAll() }
            guard let refusal = await events.waitForRefusal(seconds: 30) else { return nil }
            // The source sees the viewer advertise itself without a secret, and logs why it does not connect to it:
            // waited for while the viewer still runs, since a viewer that stopped is no longer advertised (on a
            // loaded machine the source may resolve it only after the viewer had its refusal).
            try await capture.waitForLine(containing: "snoop does not use a shared secret")
            return refusal
        }
        let refusal = try #require(refused, "no refusal reported")
        #expect(refusal.kind == .secretRequired)
        #expect(refusal.info?.appName == "vault")
        #expect(refusal.description.contains("requires a shared secret"))
        #expect(events.recordCount == 0)

        // Without follow, the run ends with the refusal rather than "no log source found".
        configuration.follow = false
        configuration.discoveryTime = .seconds(3)
        await #expect {
            try await LogViewer(configuration: configuration).run { _ in }
        } throws: { error in
            guard let error = error as? LogViewerError, error.code == .refused else { return false }
            return error.refusals.map(\.kind) == [.secretRequired]
        }

        // With the secret, the same viewer gets the records.
        configuration.security = .sharedSecret(try SharedSecret(secret))
        let collected = Collected<UInt64>()
        try await LogViewer(configuration: configuration).run { event in
            if case .records(let records, _) = event { collected.append(contentsOf: records.map(\.sequence)) }
        }
        #expect(collected.values.count >= 20)
        await logs.stop()
        #expect(!capture.text.contains(secret))
    }

    @Test(arguments: ["chirp", "logdemo"])
    func aSecretOnTheCommandLineIsRefused(_ tool: String) async throws {
        let secret = Self.randomSecret()
        let arguments = tool == "chirp" ? ["logs", "--secret", secret] : ["--secret=\(secret)"]
        let process = try await TestProcess(binaryPath(tool), arguments)
        let status = try? await process.waitForExit(timeout: .seconds(30))
        #expect(status == 64, "\(tool) exited \(String(describing: status)): \(process.standardError)")
        #expect(process.standardError.contains("process list"), "\(process.standardError)")
        #expect(!process.standardError.contains(secret) && !process.lines.joined().contains(secret))
    }
}

/// What an in-process viewer reported.
final class ViewerEvents: Sendable {
    private let box = NIOLockedValueBox<(refusals: [LogSourceRefusal], records: Int)>(([], 0))

    func append(_ event: LogViewerEvent) {
        box.withLockedValue { state in
            switch event {
            case .refused(let refusal): state.refusals.append(refusal)
            case .records(let records, _): state.records += records.count
            default: break
            }
        }
    }

    var recordCount: Int { box.withLockedValue { $0.records } }

    /// The first refusal, once reported; `nil` at the deadline.
    func waitForRefusal(seconds: Double) async -> LogSourceRefusal? {
        await valueWithin(.seconds(seconds)) {
            while true {
                if let first = self.box.withLockedValue({ $0.refusals.first }) { return first }
                try await Task.sleep(for: .milliseconds(50))
            }
        }
    }
}
