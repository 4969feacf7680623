import Chirp
import Foundation
import Testing

@testable import ChirpCommands

/// listr and listrctl with device identities, driven as a user does: `chirp id` on the CLI's side, `chirp trust` on
/// the app's, each identity in the test's own `XDG_CONFIG_HOME`.
@Suite(.serialized, .timeLimit(.minutes(10))) struct IdentityTests {
    @Test func anAppServesOnlyTheDevicesItTrustsAndEachCommandNeedsItsPermission() async throws {
        try await ListrFixture.run { fixture in
            let environment: [String: String?] = [
                "XDG_CONFIG_HOME": fixture.path("config"), "CHIRP_SECRET": "", "CHIRP_IDENTITY": ""
            ]
            let app = try await fixture.startApp("vault", extra: ["--identity", "listr"], environment: environment)
            #expect(app.standardError.contains("using the device identity listr (chirp:"), "\(app.standardError)")

            // The CLI's identity, made on first use; its fingerprint alone on standard output.
            let id = try await Self.chirp(["id", "laptop"], environment: environment)
            #expect(id.status == 0, "\(id)")
            let fingerprint = id.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(fingerprint.hasPrefix("chirp:") && !fingerprint.contains("\n"), "\(id)")

            // Not trusted yet: refused, with what its owner can run.
            let refused = try await fixture.ctl(
                ["item", "list", "--identity", "laptop"], timeout: 60, environment: environment)
            #expect(refused.status == CommandExitCode.refused.rawValue, "\(refused)")
            #expect(refused.stderr.contains("does not trust this device (\(fingerprint))"), "\(refused)")
            #expect(refused.elapsed < .seconds(30), "\(refused)")

            // Trusted to read: it reads, and a command that writes is refused with its own exit code.
            let trusted = try await Self.chirp(
                ["trust", "add", fingerprint, "laptop", "--identity", "listr", "--perms", "read"],
                environment: environment)
            #expect(trusted.status == 0, "\(trusted)")
            #expect(await app.waitForError(containing: "read the trust file again"), "\(app.standardError)")
            let listed = try await fixture.ctl(["item", "list", "--identity", "laptop"], environment: environment)
            #expect(listed.status == 0, "\(listed)")
            #expect(listed.lines == ["no items"], "\(listed)")
            let added = try await fixture.ctl(["item", "add", "milk", "--identity", "laptop"], environment: environment)
            #expect(added.status == CommandExitCode.notPermitted.rawValue, "\(added)")
            #expect(added.stderr.contains("needs the 'write' permission"), "\(added)")
            #expect(added.stderr.contains("holds read"), "\(added)")
            let stillEmpty = try await fixture.ctl(["item", "list", "--identity", "laptop"], environment: environment)
            #expect(stillEmpty.lines == ["no items"], "\(stillEmpty)")

            let list = try await Self.chirp(["trust", "list", "--identity", "listr"], environment: environment)
            #expect(list.lines == ["\(fingerprint)  laptop  perms=read"], "\(list)")

            // No longer trusted: refused again.
            let removed = try await Self.chirp(
                ["trust", "remove", fingerprint, "--identity", "listr"], environment: environment)
            #expect(removed.status == 0, "\(removed)")
            // The app reads the file again within a second of the change.
            #expect(await app.waitForError(containing: "was removed from the trust file"), "\(app.standardError)")
            let again = try await fixture.ctl(
                ["item", "list", "--identity", "laptop"], timeout: 60, environment: environment)
            #expect(again.status == CommandExitCode.refused.rawValue, "\(again)")
        }
    }

    @Test func trustRefusesATypoAndAnUnknownPermission() async throws {
        try await ListrFixture.run { fixture in
            let environment: [String: String?] = ["XDG_CONFIG_HOME": fixture.path("config")]
            let id = try await Self.chirp(["id", "laptop"], environment: environment)
            let fingerprint = id.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            var typo = Array(fingerprint)
            typo[8] = typo[8] == "a" ? "b" : "a"
            let mistyped = try await Self.chirp(["trust", "add", String(typo), "laptop"], environment: environment)
            #expect(mistyped.status == 64, "\(mistyped)")
            #expect(mistyped.stderr.contains("not a fingerprint"), "\(mistyped)")
            let unknown = try await Self.chirp(
                ["trust", "add", fingerprint, "laptop", "--perms", "read,fly"], environment: environment)
            #expect(unknown.status == 64, "\(unknown)")
            #expect(unknown.stderr.contains("unknown permission 'fly'"), "\(unknown)")
            // Nothing was written by either.
            let list = try await Self.chirp(["trust", "list"], environment: environment)
            #expect(list.status == 0 && list.stdout.isEmpty, "\(list)")
            // The positive control: the same line without the typo is taken.
            let good = try await Self.chirp(["trust", "add", fingerprint, "laptop"], environment: environment)
            #expect(good.status == 0, "\(good)")
            let twice = try await Self.chirp(["trust", "add", fingerprint, "laptop"], environment: environment)
            #expect(twice.status == 64, "\(twice)")
        }
    }

    /// `listrctl pair` and `listr --allow-pairing` as a person uses them: the same code on both terminals, a yes typed
    /// at listr, and the CLI trusted from then on with the permissions listr gives; a no leaves the next CLI refused.
    @Test func aCLIPairsWithListrWhenThePersonThereSeesTheSameCodeAndSaysYes() async throws {
        try await ListrFixture.run { fixture in
            let environment: [String: String?] = [
                "XDG_CONFIG_HOME": fixture.path("config"), "CHIRP_SECRET": "", "CHIRP_IDENTITY": ""
            ]
            let app = try await fixture.startApp(
                "vault", extra: ["--identity", "listr", "--allow-pairing", "--pair-permissions", "read"],
                environment: environment, input: .pipe)
            #expect(app.standardError.contains("taking pairing requests"), "\(app.standardError)")

            let pairing = try await fixture.launchCtl(
                ["pair", "--identity", "laptop"], timeout: 60, environment: environment)
            let codeLine = try await pairing.0.waitForLine(containing: "Pairing code: ")
            let code = String(codeLine.dropFirst("Pairing code: ".count))
            #expect(code.count == 6, "\(codeLine)")
            // listr shows the same code, names the device, and asks.
            #expect(
                await app.waitForError(containing: "code \(code): pair only if listrctl shows the same code"),
                "\(app.standardError)")
            #expect(app.standardError.contains("pairing request from \"laptop\""), "\(app.standardError)")
            app.send("y")
            let paired = try await fixture.finish(pairing)
            #expect(paired.status == 0, "\(paired)")
            #expect(paired.stdout.contains("Paired with vault (chirp:"), "\(paired)")

            // Trusted now, with what listr gave: it reads, and may not write.
            let listed = try await fixture.ctl(["item", "list", "--identity", "laptop"], environment: environment)
            #expect(listed.status == 0 && listed.lines == ["no items"], "\(listed)")
            let added = try await fixture.ctl(["item", "add", "milk", "--identity", "laptop"], environment: environment)
            #expect(added.status == CommandExitCode.notPermitted.rawValue, "\(added)")
            let trusted = try await Self.chirp(["trust", "list", "--identity", "listr"], environment: environment)
            #expect(trusted.lines.count == 1 && trusted.stdout.contains("laptop  perms=read"), "\(trusted)")

            // A no: the guest is told, and stays refused.
            let guestPairing = try await fixture.launchCtl(
                ["pair", "--identity", "guest"], timeout: 60, environment: environment)
            try await guestPairing.0.waitForLine(containing: "Pairing code: ")
            #expect(await app.waitForError(containing: "pairing request from \"guest\""), "\(app.standardError)")
            app.send("n")
            let declined = try await fixture.finish(guestPairing)
            #expect(declined.status == CommandExitCode.refused.rawValue, "\(declined)")
            #expect(declined.stderr.contains("the pairing was declined on \"vault\""), "\(declined)")
            let guest = try await fixture.ctl(
                ["item", "list", "--identity", "guest"], timeout: 60, environment: environment)
            #expect(guest.status == CommandExitCode.refused.rawValue, "\(guest)")
        }
    }

    @Test func listrWithoutAllowPairingRefusesAPairingAndListrctlNeedsAnIdentity() async throws {
        try await ListrFixture.run { fixture in
            let environment: [String: String?] = [
                "XDG_CONFIG_HOME": fixture.path("config"), "CHIRP_SECRET": "", "CHIRP_IDENTITY": ""
            ]
            _ = try await fixture.startApp("vault", extra: ["--identity", "listr"], environment: environment)
            let refused = try await fixture.ctl(["pair", "--identity", "laptop"], timeout: 30, environment: environment)
            #expect(refused.status == CommandExitCode.refused.rawValue, "\(refused)")
            #expect(refused.stderr.contains("\"vault\" does not take pairing requests now"), "\(refused)")
            #expect(!refused.stdout.contains("Pairing code"), "\(refused)")
            let noIdentity = try await fixture.ctl(["pair"], timeout: 30, environment: environment)
            #expect(noIdentity.status == 64, "\(noIdentity)")
            #expect(noIdentity.stderr.contains("pairing needs a device identity: give --identity"), "\(noIdentity)")
        }
    }

    /// Runs `chirp ARGUMENTS` to its end.
    static func chirp(_ arguments: [String], environment: [String: String?]) async throws -> CtlResult {
        let started = ContinuousClock.now
        let process = try await TestProcess(binaryPath("chirp"), arguments, environment: environment, input: .closed)
        let status = try await process.waitForExit(timeout: .seconds(60))
        return CtlResult(
            status: status, stdout: process.standardOutput, stderr: process.standardError,
            elapsed: ContinuousClock.now - started)
    }
}
