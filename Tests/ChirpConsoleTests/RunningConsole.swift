import Chirp
import ChirpLogs
import ChirpTestSupport
import Foundation
import Logging
import NIOConcurrencyHelpers

@testable import ChirpConsole

/// A console running in this test's process on 127.0.0.1 (a free port), following the sources of `serviceType` on
/// loopback, with its store in `dataDirectory`.
final class RunningConsole: Sendable {
    let task: Task<Void, any Error>
    let port: Int
    let dataDirectory: String

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
        let console = ChirpConsole(configuration: configuration)
        let (ports, reporter) = AsyncStream.makeStream(of: Int.self)
        task = Task { try await console.run { port in reporter.yield(port) } }
        var found: Int?
        for await port in ports {
            found = port
            break
        }
        guard let found, found > 0 else {
            task.cancel()
            _ = try? await task.value
            throw HTTPProbe.ProbeError(description: "the console did not start")
        }
        port = found
        self.dataDirectory = dataDirectory
    }

    var http: HTTPProbe { HTTPProbe(port: port) }

    /// Stops the console and waits until it has closed its store.
    func stop() async {
        task.cancel()
        _ = try? await task.value
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
