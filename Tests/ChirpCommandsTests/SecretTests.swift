import Chirp
import Foundation
import Testing

@testable import ChirpCommands

/// listr and listrctl with shared secrets: from CHIRP_SECRET or --secret-file, never from the command line; a missing
/// or wrong secret is refused quickly, with exit code 6 and a message that says what to do.
@Suite(.serialized, .timeLimit(.minutes(10))) struct SecretTests {
    static func randomSecret() -> String { "s3cret-" + UUID().uuidString }

    /// Writes `secret` to a file only the owner can read; returns its path.
    static func secretFile(_ secret: String, in fixture: ListrFixture, name: String = "secret") throws -> String {
        let path = fixture.path(name)
        #expect(
            FileManager.default.createFile(
                atPath: path, contents: Data((secret + "\n").utf8), attributes: [.posixPermissions: 0o600]))
        return path
    }

    /// Fails the test if `secret` shows anywhere in `outputs`.
    static func expectNoLeak(_ secret: String, in outputs: [String], sourceLocation: SourceLocation = #_sourceLocation)
    {
        for output in outputs {
            #expect(!output.contains(secret), "the secret leaked into: \(output)", sourceLocation: sourceLocation)
        }
    }

    @Test func theRightSecretWorksFromTheEnvironmentAndFromAFile() async throws {
        try await ListrFixture.run { fixture in
            let secret = Self.randomSecret()
            let app = try await fixture.startApp("vault", environment: ["CHIRP_SECRET": secret])
            #expect(app.standardError.contains("requiring a shared secret (from CHIRP_SECRET)"), "\(app.standardError)")

            let added = try await fixture.ctl(["item", "add", "secret plans"], environment: ["CHIRP_SECRET": secret])
            #expect(added.status == 0, "\(added)")
            #expect(added.lines == ["added #1 [ ] secret plans"], "\(added)")

            let path = try Self.secretFile(secret, in: fixture)
            let listed = try await fixture.ctl(
                ["item", "list", "--secret-file", path], environment: ["CHIRP_SECRET": ""])
            #expect(listed.status == 0, "\(listed)")
            #expect(listed.lines == ["#1 [ ] secret plans"], "\(listed)")
            #expect(listed.stderr.isEmpty, "\(listed)")

            let everyApp = try await fixture.ctl(["item", "list", "--all", "--secret-file", path])
            #expect(everyApp.status == 0, "\(everyApp)")
            Self.expectNoLeak(
                secret,
                in: [added.stdout, added.stderr, listed.stdout, listed.stderr, everyApp.stderr, app.standardError])
        }
    }

    @Test func aMissingSecretIsRefusedQuicklyWithExitCode6() async throws {
        try await ListrFixture.run { fixture in
            let secret = Self.randomSecret()
            let app = try await fixture.startApp("vault", environment: ["CHIRP_SECRET": secret])
            // A long timeout: the refusal must not wait for it.
            let result = try await fixture.ctl(["item", "list"], timeout: 60, environment: ["CHIRP_SECRET": ""])
            #expect(result.status == CommandExitCode.refused.rawValue, "\(result)")
            #expect(result.stderr.contains("requires a shared secret"), "\(result)")
            #expect(result.stderr.contains("CHIRP_SECRET"), "\(result)")
            #expect(result.stderr.contains("--secret-file"), "\(result)")
            #expect(result.stdout.isEmpty)
            #expect(result.elapsed < .seconds(30), "\(result)")
            // (The app logs why too if it discovers the CLI before it exits; the library tests check both sides.)
            let items = try await fixture.ctl(["item", "list"], environment: ["CHIRP_SECRET": secret])
            #expect(items.lines == ["no items"], "\(items)")
            Self.expectNoLeak(secret, in: [result.stderr, app.standardError, items.stderr])
        }
    }

    @Test func aWrongSecretIsRefusedQuicklyWithExitCode6() async throws {
        try await ListrFixture.run { fixture in
            let secret = Self.randomSecret()
            let wrong = Self.randomSecret()
            let path = try Self.secretFile(secret, in: fixture)
            let app = try await fixture.startApp("vault", extra: ["--secret-file", path])
            let wrongPath = try Self.secretFile(wrong, in: fixture, name: "wrong")
            for arguments in [
                ["item", "add", "injected"], ["item", "add", "injected", "--peer", "vault"],
                ["item", "add", "injected", "--all"]
            ] {
                let result = try await fixture.ctl(arguments + ["--secret-file", wrongPath], timeout: 60)
                #expect(result.status == CommandExitCode.refused.rawValue, "\(arguments): \(result)")
                #expect(result.stderr.contains("shared secret does not match"), "\(arguments): \(result)")
                #expect(result.elapsed < .seconds(30), "\(result)")
                Self.expectNoLeak(secret, in: [result.stdout, result.stderr])
                Self.expectNoLeak(wrong, in: [result.stdout, result.stderr])
            }
            #expect(await app.waitForError(containing: "shared secret does not match"), "\(app.standardError)")
            let items = try await fixture.ctl(["item", "list", "--secret-file", path])
            #expect(items.lines == ["no items"], "nothing was added: \(items)")
            Self.expectNoLeak(secret, in: [app.standardError])
            Self.expectNoLeak(wrong, in: [app.standardError])
        }
    }

    @Test func aSecretForAnAppThatHasNoneIsRefusedWithExitCode6() async throws {
        try await ListrFixture.run { fixture in
            _ = try await fixture.startApp("open")
            let result = try await fixture.ctl(
                ["item", "list"], timeout: 60, environment: ["CHIRP_SECRET": Self.randomSecret()])
            #expect(result.status == CommandExitCode.refused.rawValue, "\(result)")
            #expect(result.stderr.contains("does not use a shared secret"), "\(result)")
        }
    }

    @Test(arguments: [["--secret", "VALUE"], ["--secret=VALUE"]])
    func aSecretOnTheCommandLineIsRefused(_ form: [String]) async throws {
        try await ListrFixture.run { fixture in
            let secret = Self.randomSecret()
            let arguments = form.map { $0.replacingOccurrences(of: "VALUE", with: secret) }
            let ctl = try await fixture.ctl(["item", "list"] + arguments)
            #expect(ctl.status == CommandExitCode.usage, "\(ctl)")
            #expect(ctl.stderr.contains("process list"), "\(ctl)")
            #expect(ctl.stderr.contains("--secret-file"), "\(ctl)")

            let app = try await fixture.launchApp("vault", extra: arguments)
            #expect(try await app.waitForExit() == CommandExitCode.usage, "\(app.standardError)")
            #expect(app.standardError.contains("process list"), "\(app.standardError)")
            Self.expectNoLeak(secret, in: [ctl.stdout, ctl.stderr, app.standardOutput, app.standardError])
        }
    }

    @Test func badSecretSourcesAreUsageErrorsThatNameTheSourceOnly() async throws {
        try await ListrFixture.run { fixture in
            let missing = try await fixture.ctl(["item", "list", "--secret-file", fixture.path("nope")])
            #expect(missing.status == CommandExitCode.usage, "\(missing)")
            #expect(missing.stderr.contains("cannot read the secret file"), "\(missing)")

            let short = try await fixture.ctl(["item", "list"], environment: ["CHIRP_SECRET": "abc123"])
            #expect(short.status == CommandExitCode.usage, "\(short)")
            #expect(short.stderr.contains("CHIRP_SECRET"), "\(short)")
            #expect(short.stderr.contains("too short"), "\(short)")
            #expect(!short.stderr.contains("abc123"), "\(short)")

            let path = fixture.path("loose")
            let secret = Self.randomSecret()
            #expect(
                FileManager.default.createFile(
                    atPath: path, contents: Data(secret.utf8), attributes: [.posixPermissions: 0o644]))
            _ = try await fixture.startApp("vault", extra: ["--secret-file", path])
            let loose = try await fixture.ctl(["item", "list", "--secret-file", path])
            #expect(loose.status == 0, "\(loose)")
            #expect(loose.stderr.contains("chmod 600"), "a world-readable secret file is warned about: \(loose)")
            Self.expectNoLeak(secret, in: [loose.stdout, loose.stderr])
        }
    }

    @Test func helpShowsTheSecretFileOptionButNeverTheCommandLineOne() async throws {
        try await ListrFixture.run { fixture in
            for binary in ["listrctl", "listr"] {
                let arguments = binary == "listr" ? ["--help"] : ["item", "list", "--help"]
                let process = try await TestProcess(
                    binaryPath(binary), arguments, environment: ["CHIRP_SECRET": "never-shown-in-help"], input: .closed)
                #expect(try await process.waitForExit() == 0)
                let help = process.standardOutput
                #expect(help.contains("--secret-file <PATH>"), "\(help)")
                #expect(help.contains("CHIRP_SECRET"), "\(help)")
                #expect(!help.contains("--secret <"), "\(help)")
                #expect(!help.contains("never-shown-in-help"), "\(help)")
            }
        }
    }

    @Test func theReceiverWarnsAboutOpenAccessOnlyWithoutASecretOrLoopback() throws {
        var configuration = Configuration(serviceType: "tsecret")
        configuration.interface = .any
        #expect(CommandReceiver.openAccessWarning(for: configuration)?.contains("no shared secret") == true)
        configuration.security = .sharedSecret(try SharedSecret(Self.randomSecret()))
        #expect(CommandReceiver.openAccessWarning(for: configuration) == nil)
    }

    @Test func secretOptionsReadTheFileFirstThenTheEnvironment() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "secret-options-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("secret").path
        #expect(
            FileManager.default.createFile(
                atPath: path, contents: Data("from-the-file-123\n".utf8), attributes: [.posixPermissions: 0o600]))

        let none = try SecretOptions.parse([])
        if case .none = try none.security(environment: [:]) {} else { Issue.record("no secret expected") }
        if case .sharedSecret = try none.security(environment: ["CHIRP_SECRET": "from-the-environment"]) {
        } else {
            Issue.record("CHIRP_SECRET expected")
        }
        #expect(none.source(environment: ["CHIRP_SECRET": "x"]) == "CHIRP_SECRET")
        let file = try SecretOptions.parse(["--secret-file", path])
        #expect(file.source(environment: ["CHIRP_SECRET": "x"]) == "--secret-file \(path)")
        if case .sharedSecret = try file.security(environment: [:]) {
        } else {
            Issue.record("the file's secret expected")
        }
        #expect(throws: (any Error).self) { try SecretOptions.parse(["--secret", "on-the-command-line"]) }
    }
}
