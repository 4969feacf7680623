// What every test target shares (child processes, paths, timeouts), visible in every file here.
@_exported import ChirpTestSupport
import Foundation
import NIOConcurrencyHelpers
import Testing

/// Runs listr and listrctl the way a user does, each test on a fresh service type and in a fresh directory.
final class ListrFixture: Sendable {
    let service: String
    let directory: URL
    private let launched = NIOLockedValueBox<[TestProcess]>([])

    /// Runs `body` with a fresh fixture, then stops every app it started and removes its directory, whether
    /// `body` succeeded or not.
    static func run(_ body: (ListrFixture) async throws -> Void) async throws {
        let fixture = try ListrFixture()
        try await withTeardown {
            try await body(fixture)
        } teardown: {
            await fixture.tearDown()
        }
    }

    private init() throws {
        service = uniqueServiceType()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("listr-tests-\(service)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// Starts `listr --name NAME` with a store in the test directory (or `store`); does not wait.
    func launchApp(
        _ name: String, store: String? = nil, extra: [String] = [], environment: [String: String?] = [:],
        input: TestProcess.Input = .closed
    ) async throws -> TestProcess {
        let app = try await TestProcess(
            binaryPath("listr"),
            [
                "--name", name, "--store", store ?? path("\(name).json"), "--service", service, "--loopback"
            ] + extra, environment: environment, input: input)
        launched.withLockedValue { $0.append(app) }
        return app
    }

    /// Starts listr and waits until it serves commands (it is advertised).
    func startApp(
        _ name: String, store: String? = nil, extra: [String] = [], environment: [String: String?] = [:],
        input: TestProcess.Input = .closed
    ) async throws -> TestProcess {
        let app = try await launchApp(name, store: store, extra: extra, environment: environment, input: input)
        let ready = await app.waitForError(containing: "ready:")
        try #require(ready, "listr \(name) did not start: \(app.standardError)")
        return app
    }

    /// Starts several apps at once and waits until all serve.
    func startApps(_ names: [String]) async throws -> [TestProcess] {
        var apps: [TestProcess] = []
        for name in names { apps.append(try await launchApp(name)) }
        for (name, app) in zip(names, apps) {
            let ready = await app.waitForError(containing: "ready:")
            try #require(ready, "listr \(name) did not start: \(app.standardError)")
        }
        return apps
    }

    /// Runs listrctl with `arguments` plus this fixture's service, loopback and `timeout`, to completion.
    func ctl(_ arguments: [String], timeout: Double = 15, environment: [String: String?] = [:]) async throws
        -> CtlResult
    {
        let process = try await launchCtl(arguments, timeout: timeout, environment: environment)
        return try await finish(process)
    }

    func launchCtl(
        _ arguments: [String], timeout: Double = 15, environment: [String: String?] = [:]
    ) async throws -> (TestProcess, ContinuousClock.Instant) {
        let started = ContinuousClock.now
        let process = try await TestProcess(
            binaryPath("listrctl"), arguments + ["--service", service, "--loopback", "--timeout", String(timeout)],
            environment: environment, input: .closed)
        return (process, started)
    }

    /// Waits for a listrctl run to end (a generous minute: its own `--timeout` ends it long before).
    func finish(_ launched: (TestProcess, ContinuousClock.Instant)) async throws -> CtlResult {
        let status = try await launched.0.waitForExit(timeout: .seconds(60))
        return CtlResult(
            status: status, stdout: launched.0.standardOutput, stderr: launched.0.standardError,
            elapsed: ContinuousClock.now - launched.1)
    }

    /// Stops the apps (SIGTERM, then SIGKILL for one that does not stop within 10 s) and removes the directory.
    private func tearDown() async {
        let apps = launched.withLockedValue { $0 }
        for app in apps { app.signal(SIGTERM) }
        for app in apps { await app.stop(grace: .seconds(10)) }
        try? FileManager.default.removeItem(at: directory)
    }
}

/// What a listrctl run gave.
struct CtlResult: CustomStringConvertible {
    var status: Int32
    var stdout: String
    var stderr: String
    var elapsed: Duration

    var lines: [String] { stdout.split(separator: "\n").map(String.init) }
    var description: String { "exit \(status) after \(elapsed)\nstdout: \(stdout)\nstderr: \(stderr)" }
}
