import ChirpTestSupport
import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import ChirpConsole

#if canImport(Glibc)
import Glibc
#endif

/// `chirp-console` and `logdemo` as real processes: what a user runs. Each process a test starts is stopped on every
/// path (`withTeardown`; a ``TestProcess`` dropped is killed as well).
@Suite(.serialized, .timeLimit(.minutes(5))) struct ConsoleProcessTests {
    /// Starts chirp-console on a free port; returns the process and its port (from its "Chirp Console: URL" line).
    static func startConsole(service: String, data: String, extra: [String] = [], environment: [String: String?] = [:])
        async throws -> (TestProcess, Int)
    {
        let console = try await TestProcess(
            binaryPath("chirp-console"),
            ["--listen", "127.0.0.1:0", "--data", data, "--service", service, "--interface", "lo"] + extra,
            environment: environment)
        guard await console.waitFor({ lines in lines.contains { $0.hasPrefix("Chirp Console: http://127.0.0.1:") } }),
            let line = console.lines.first(where: { $0.hasPrefix("Chirp Console: http://127.0.0.1:") }),
            let port = Int(line.dropFirst("Chirp Console: http://127.0.0.1:".count).prefix { $0.isNumber })
        else {
            await console.stop()
            throw HTTPProbe.ProbeError(description: "chirp-console did not start: \(console.standardError)")
        }
        return (console, port)
    }

    /// The sequence numbers stored for `app`, read from the store file itself.
    static func storedSequences(_ data: String) async throws -> [UInt64] {
        let store = try await ConsoleStore.open(path: data + "/console.sqlite")
        var sequences: [UInt64] = []
        var page = RecordPage.after(0)
        while true {
            let (records, hasMore) = try await store.records(matching: RecordFilter(), page: page, limit: 1000)
            sequences += records.map(\.record.sequence)
            guard hasMore, let last = records.last else { break }
            page = .after(last.id)
        }
        await store.close()
        return sequences
    }

    @Test func everyRecordIsStoredOnceAcrossASIGKILLOfTheConsoleAndOfTheApp() async throws {
        let service = uniqueServiceType()
        let data = TestSupport.temporaryDirectory()
        let spool = TestSupport.temporaryDirectory()
        let total = 20_000
        func startApp() async throws -> TestProcess {
            try await TestProcess(
                binaryPath("logdemo"),
                [
                    "--name", "shop", "--plain", "--rate", "4000", "--count", "\(total)", "--spool", spool,
                    "--service", service, "--interface", "lo", "--http-interval", "0"
                ])
        }
        let started = NIOLockedValueBox<[TestProcess]>([])
        try await withTeardown {
            var app = try await startApp()
            started.withLockedValue { $0.append(app) }
            var (console, port) = try await Self.startConsole(service: service, data: data)
            started.withLockedValue { $0.append(console) }
            func storedCount() async -> Int {
                let sources =
                    (try? await HTTPProbe(port: port).get("/api/sources").json()["sources"] as? [[String: Any]])
                    ?? []
                return sources.compactMap { $0["records"] as? Int }.reduce(0, +)
            }
            var waited = 0
            while await storedCount() < 3000, waited < 600 {
                try await Task.sleep(for: .milliseconds(50))
                waited += 1
            }
            #expect(await storedCount() >= 3000)
            // Mid-stream: the console dies without a word, then comes back on the same store.
            console.signal(SIGKILL)
            _ = try? await console.waitForExit()
            (console, port) = try await Self.startConsole(service: service, data: data)
            started.withLockedValue { $0.append(console) }
            waited = 0
            while await storedCount() < 8000, waited < 600 {
                try await Task.sleep(for: .milliseconds(50))
                waited += 1
            }
            // Then the app dies too, and starts again on the same spool: it continues its stream after what the
            // console acknowledged, and logs its 20,000 again after that.
            app.signal(SIGKILL)
            _ = try? await app.waitForExit()
            app = try await startApp()
            started.withLockedValue { $0.append(app) }
            // Until the second run's last record ("tick 20000" from its pid) is in: a stream's records are stored in
            // order, so every record of both runs that will ever be stored is then stored, a duplicate included.
            let secondRunsLast = "/api/records?pid=\(app.pid)&regex=%5Etick%20\(total)%24"
            func secondRunEnded() async -> Bool {
                let records = try? await HTTPProbe(port: port).get(secondRunsLast).json()["records"] as? [Any]
                return records?.isEmpty == false
            }
            waited = 0
            while await !secondRunEnded(), waited < 1800 {
                try await Task.sleep(for: .milliseconds(50))
                waited += 1
            }
            #expect(await secondRunEnded(), "the second run's last record within 90 s")
            await console.stop()
            await app.stop()

            let sequences = try await Self.storedSequences(data)
            #expect(Set(sequences).count == sequences.count, "no sequence number stored twice")
            #expect(sequences == sequences.sorted(), "stored in order")
            // Everything the first run logged before its SIGKILL and the console acknowledged is there, and the second
            // run's records follow: no gap except what the first run had not yet written to its spool when it died.
            #expect(sequences.first == 1)
            #expect(sequences.count >= 8000 + total)
            let second = Array(sequences.suffix(total))
            #expect(
                second.last.map { $0 - (second.first ?? 0) + 1 } == UInt64(total),
                "the second run's records, without a gap")
        } teardown: {
            for process in started.withLockedValue({ $0 }) { await process.stop() }
        }
    }

    @Test func aPortInUseIsSaidInTheToolsStyleWithAHint() async throws {
        let service = uniqueServiceType()
        let (first, port) = try await Self.startConsole(service: service, data: TestSupport.temporaryDirectory())
        try await withTeardown {
            let second = try await TestProcess(
                binaryPath("chirp-console"),
                [
                    "--listen", "127.0.0.1:\(port)", "--data", TestSupport.temporaryDirectory(), "--service", service,
                    "--interface", "lo"
                ])
            let status = try await withTeardown {
                try await second.waitForExit()
            } teardown: {
                await second.stop()
            }
            let errors = second.standardError
            #expect(status == 1, "\(second.transcript)")
            #expect(
                errors.hasPrefix("chirp-console: error: port \(port) is in use on 127.0.0.1"), "\(second.transcript)")
            #expect(
                errors.contains("chirp-console: hint: stop it, or choose another port: --listen 127.0.0.1:PORT"),
                "\(second.transcript)")
            #expect(!errors.contains("Error:") && !errors.contains("errno"), "\(second.transcript)")
            #expect(second.lines.isEmpty, "nothing on standard output: \(second.transcript)")
            #expect(first.isRunning)  // control: the port was taken, by the first console
        } teardown: {
            await first.stop()
        }
    }

    @Test func versionIsTheToolsVersion() async throws {
        let process = try await TestProcess(binaryPath("chirp-console"), ["--version"], input: .closed)
        let status = try await withTeardown {
            try await process.waitForExit()
        } teardown: {
            await process.stop()
        }
        #expect(status == 0, "\(process.transcript)")
        let version = process.lines.joined(separator: "\n")
        #expect(version.wholeMatch(of: /[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.]+)?/) != nil, "\(process.transcript)")
    }

    @Test func sigtermEndsTheConsoleWhileAPageFollowsTheLiveStream() async throws {
        let (console, port) = try await Self.startConsole(
            service: uniqueServiceType(), data: TestSupport.temporaryDirectory())
        try await withTeardown {
            let connected = NIOLockedValueBox(false)
            let stream = Task {
                try await HTTPProbe(port: port).read("/api/stream", timeout: 60) { text in
                    if text.contains(": connected") { connected.withLockedValue { $0 = true } }
                    return false
                }
            }
            #expect(await eventually(timeout: .seconds(20)) { connected.withLockedValue { $0 } })
            console.signal(SIGTERM)
            let status = try await console.waitForExit(timeout: .seconds(20))
            #expect(status == 0, "\(console.transcript)")
            #expect(!console.standardError.lowercased().contains("error"), "\(console.transcript)")
            _ = try await stream.value  // ended with the console
        } teardown: {
            await console.stop()
        }
    }
}
