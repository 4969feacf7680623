import Chirp
import ChirpLogs
import ChirpTestSupport
import Foundation
import Logging
import NIOConcurrencyHelpers
import Testing

@testable import ChirpConsole

/// A console running in this test's process on 127.0.0.1 (a free port), following the sources of `serviceType` on
/// loopback, with its store in `dataDirectory`. What it logs goes to ``log`` (not to the test's output).
///
/// Stop it on every path: `try await RunningConsole.with(...) { console in ... }`, or ``stop()`` inside
/// `withTeardown`. ``stop()`` records an issue when the console logged at error level (an ordinary run and shutdown
/// log nothing there).
final class RunningConsole: Sendable {
    let task: Task<Void, any Error>
    let port: Int
    let dataDirectory: String
    let log: LogCapture

    init(
        serviceType: String, dataDirectory: String = TestSupport.temporaryDirectory(), token: String? = nil,
        configure: (inout ConsoleConfiguration) -> Void = { _ in }
    ) async throws {
        var configuration = ConsoleConfiguration(dataDirectory: dataDirectory)
        configuration.port = 0
        configuration.token = token
        configuration.viewer.serviceType = serviceType
        configuration.viewer.transceiver.interface = .loopback
        configure(&configuration)
        let log = LogCapture()
        var logger = log.logger("chirp.console")
        logger.logLevel = .info  // not SQLite's and the server's debug lines
        let console = ChirpConsole(configuration: configuration, logger: logger)
        let (ports, reporter) = AsyncStream.makeStream(of: Int.self)
        task = Task {
            defer { reporter.finish() }  // a console that fails before it listens ends the wait below
            try await console.run { port in reporter.yield(port) }
        }
        var found: Int?
        for await port in ports {
            found = port
            break
        }
        guard let found, found > 0 else {
            task.cancel()
            let outcome = await task.result
            throw HTTPProbe.ProbeError(description: "the console did not start: \(outcome)")
        }
        port = found
        self.dataDirectory = dataDirectory
        self.log = log
    }

    /// Runs `body` with a console started as ``init(serviceType:dataDirectory:token:configure:)`` does, and stops it
    /// whether `body` returned or threw.
    static func with(
        serviceType: String, dataDirectory: String = TestSupport.temporaryDirectory(), token: String? = nil,
        configure: (inout ConsoleConfiguration) -> Void = { _ in }, _ body: (RunningConsole) async throws -> Void
    ) async throws {
        let console = try await RunningConsole(
            serviceType: serviceType, dataDirectory: dataDirectory, token: token, configure: configure)
        try await withTeardown {
            try await body(console)
        } teardown: {
            await console.stop()
        }
    }

    /// What the console logged at error level or above, one line each.
    var errorLines: [String] {
        log.entries.filter { $0.level >= .error }.map(LogCapture.line(of:))
    }

    var http: HTTPProbe { HTTPProbe(port: port) }

    /// Stops the console (a cancellation: it shuts down gracefully) and waits until it has closed its store; records an
    /// issue if it logged anything at error level, its shutdown included.
    func stop(sourceLocation: SourceLocation = #_sourceLocation) async {
        task.cancel()
        _ = try? await task.value
        #expect(errorLines.isEmpty, "the console logged errors: \(errorLines)", sourceLocation: sourceLocation)
    }

    /// Waits until the API lists at least `count` records matching `query` (a query string); returns them.
    @discardableResult
    func waitForRecords(_ count: Int, query: String = "", seconds: Double = 30) async throws -> [[String: Any]] {
        let deadline = Date().addingTimeInterval(seconds)
        var records: [[String: Any]] = []
        while Date() < deadline {
            let response = try await http.get("/api/records?limit=1000" + (query.isEmpty ? "" : "&" + query))
            records = response.json()["records"] as? [[String: Any]] ?? []
            if records.count >= count { return records }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw HTTPProbe.ProbeError(description: "only \(records.count) of \(count) records within \(Int(seconds)) s")
    }
}

/// A log source in this process, on loopback.
func makeSource(
    _ serviceType: String, appName: String = "inproc", configure: (inout LogSourceConfiguration) -> Void = { _ in }
) throws -> LogSource {
    var configuration = LogSourceConfiguration(appName: appName)
    configuration.serviceType = serviceType
    configuration.transceiver.interface = .loopback
    configure(&configuration)
    return try LogSource(configuration: configuration)
}
