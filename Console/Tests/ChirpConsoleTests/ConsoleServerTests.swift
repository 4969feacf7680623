import Chirp
import ChirpLogs
import ChirpTestSupport
import Foundation
import Logging
import NIOConcurrencyHelpers
import Testing

@testable import ChirpConsole

/// The console's server over real HTTP on loopback, fed by a real log source through the avahi-daemon. Every console
/// and source a test starts is stopped on every path (`RunningConsole.with`, `withSource`), and a console that logged
/// at error level, its shutdown included, fails the test.
@Suite(.serialized, .timeLimit(.minutes(3))) struct ConsoleServerTests {
    @Test func recordsOfASourceReachTheAPIWithTheirFilters() async throws {
        let service = uniqueServiceType()
        try await withSource(service, appName: "orders") { source in
            let logger = Logger(label: "orders.main") { source.handler(label: $0) }
            for n in 1...50 { logger.info("order \(n) placed", metadata: ["n": "\(n)"]) }
            logger.error("payment declined", metadata: ["code": "card_declined"])
            source.report(
                HTTPExchange(
                    method: "POST", url: "http://127.0.0.1:9/orders",
                    requestBody: HTTPBody(Data(#"{"item":2}"#.utf8)), status: 500, duration: 0.012))
            try await source.start()
            try await RunningConsole.with(serviceType: service) { console in
                let all = try await console.waitForRecords(52)
                #expect(all.count == 52)
                #expect(all.first?["app"] as? String == "orders")
                let errors =
                    try await console.http.get("/api/records?level=error").json()["records"] as? [[String: Any]] ?? []
                #expect(
                    errors.map { $0["message"] as? String } == [
                        "payment declined", "POST http://127.0.0.1:9/orders -> 500 (12.0 ms)"
                    ])
                #expect(errors.allSatisfy { ["error", "critical"].contains($0["level"] as? String ?? "") })
                let search =
                    try await console.http.get("/api/records?q=order+17").json()["records"] as? [[String: Any]] ?? []
                #expect(search.map { $0["message"] as? String } == ["order 17 placed"])
                let exchanges =
                    try await console.http.get("/api/records?http=1").json()["records"] as? [[String: Any]] ?? []
                let http = try #require(exchanges.first?["http"] as? [String: Any])
                #expect(http["method"] as? String == "POST")
                #expect(http["status"] as? Int == 500)
                #expect(http["requestBody"] as? String == #"{"item":2}"#)
                let endpoints =
                    try await console.http.get("/api/endpoints").json()["endpoints"] as? [[String: Any]] ?? []
                #expect(endpoints.first?["path"] as? String == "/orders")
                #expect(endpoints.first?["errorRate"] as? Double == 1)
                let sources = try await console.http.get("/api/sources").json()["sources"] as? [[String: Any]] ?? []
                #expect(sources.first?["live"] as? Bool == true)
                #expect(sources.first?["records"] as? Int == 52)
            }
        }
    }

    @Test func badParametersAreRefusedWithAReason() async throws {
        try await RunningConsole.with(serviceType: uniqueServiceType()) { console in
            for (query, reason) in [
                ("level=loud", "level"), ("regex=(unclosed", "regex"), ("limit=0", "limit"),
                ("from=yesterday", "from"), ("before=1&after=2", "before and after"), ("status=999", "status"),
                ("from=nan", "from"), ("to=inf", "to")
            ] {
                let response = try await console.http.get("/api/records?" + query)
                #expect(response.status == 400, "\(query)")
                #expect((response.json()["error"] as? String ?? "").contains(reason), "\(query): \(response.body)")
            }
            #expect(try await console.http.get("/api/records?level=warning").status == 200)  // control
            #expect(try await console.http.get("/api/records?from=1764000000.5").status == 200)  // seconds: allowed
            #expect(try await console.http.get("/api/peers?service=not_a_type!").status == 400)
        }
    }

    @Test func anUnknownPathIsA404WithTheErrorInJSON() async throws {
        try await RunningConsole.with(serviceType: uniqueServiceType()) { console in
            for path in ["/api/nothing", "/nothing", "/api/records/7", "/api/sources/x?q=1"] {
                let response = try await console.http.get(path)
                #expect(response.status == 404, "\(path)")
                #expect(response.header("content-type")?.hasPrefix("application/json") == true, "\(path)")
                let error = response.json()["error"] as? String ?? ""
                #expect(error.contains("no such path") && error.contains("GET"), "\(path): \(response.body)")
                #expect(response.header("content-security-policy") != nil, "\(path): the security headers too")
            }
            // Control: the paths of the API answer.
            #expect(try await console.http.get("/api/status").status == 200)
        }
    }

    @Test func thePageComesWithAPolicyThatRunsNoInlineScript() async throws {
        try await RunningConsole.with(serviceType: uniqueServiceType()) { console in
            let page = try await console.http.get("/")
            #expect(page.status == 200)
            #expect(page.header("content-type")?.hasPrefix("text/html") == true)
            let policy = try #require(page.header("content-security-policy"))
            #expect(
                policy.contains("script-src 'self'") && !policy.contains("unsafe-inline")
                    && !policy.contains("unsafe-eval"))
            #expect(page.header("x-content-type-options") == "nosniff")
            #expect(!page.body.contains("<script>") && page.body.contains("/assets/console.js"))
            #expect(try await console.http.get("/assets/console.js").status == 200)
            #expect(
                try await console.http.get("/assets/console.css").header("content-type")?.hasPrefix("text/css") == true)
            #expect(try await console.http.get("/assets/../Package.swift").status == 404)
            #expect(try await console.http.get("/assets/nothing.js").status == 404)
        }
    }

    @Test func everyModuleThePageImportsIsServedAsAScriptAndNoOtherPathIs() async throws {
        try await RunningConsole.with(serviceType: uniqueServiceType()) { console in
            // The modules as the browser finds them: console.js, then every `import ... from "./NAME.js"`, in turn.
            var modules = ["console.js"]
            var index = 0
            while index < modules.count {
                let module = try await console.http.get("/assets/\(modules[index])")
                #expect(module.status == 200, "\(modules[index])")
                #expect(module.header("content-type") == "text/javascript; charset=utf-8", "\(modules[index])")
                for imported in Self.imports(module.body) where !modules.contains(imported) { modules.append(imported) }
                index += 1
            }
            // Every script of the page is reached from console.js (none is left out of the list the server serves).
            let resources = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                .appendingPathComponent("../../Sources/ChirpConsole/Resources").standardizedFileURL.path
            let scripts = try FileManager.default.contentsOfDirectory(atPath: resources).filter { $0.hasSuffix(".js") }
            #expect(Set(modules) == Set(scripts))
            #expect(scripts.count > 1)
            // Nothing outside the list, however the path is spelled.
            for path in [
                "/assets/../Package.swift", "/assets/%2e%2e/Package.swift", "/assets/%2e%2e%2fPackage.swift",
                "/assets/%2E%2E%2F%2E%2E%2F%2E%2E%2FPackage.swift", "/assets/..%2FChirpConsole.swift",
                "/%2e%2e/Package.swift",
                "/assets/Resources%2fconsole.js", "/assets/console.js%00.swift", "/assets/CONSOLE.JS"
            ] {
                let response = try await console.http.get(path)
                #expect(response.status == 404, "\(path)")
                #expect(!response.body.contains("import "), "\(path)")
            }
        }
    }

    /// The modules a script imports: `import ... from "./NAME.js";` lines.
    static func imports(_ script: String) -> [String] {
        script.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("import "), let from = line.range(of: #"from "./"#), line.hasSuffix(#".js";"#)
            else { return nil }
            return String(line[from.upperBound...].dropLast(2))
        }
    }

    @Test func aTokenIsCheckedOnEveryRequestAndTheLiveStream() async throws {
        let token = "a-token-of-the-tests-0123456789"
        try await RunningConsole.with(serviceType: uniqueServiceType(), token: token) { console in
            #expect(try await console.http.get("/api/sources").status == 401)
            #expect(try await console.http.get("/").status == 401)
            #expect(try await console.http.get("/api/stream").status == 401)
            #expect(try await console.http.get("/api/nothing").status == 401)  // the token first, then the path
            #expect(
                try await console.http.get("/api/sources", headers: ["Authorization": "Bearer wrong-token-0123456789"])
                    .status == 401)
            #expect(try await console.http.get("/api/sources?token=wrong").status == 401)
            // Control: the right token, each way.
            #expect(
                try await console.http.get("/api/sources", headers: ["Authorization": "Bearer \(token)"]).status == 200)
            let viaQuery = try await console.http.get("/?token=\(token)")
            #expect(viaQuery.status == 200)
            let cookie = try #require(viaQuery.header("set-cookie")?.split(separator: ";").first.map(String.init))
            #expect(try await console.http.get("/assets/console.js", headers: ["Cookie": cookie]).status == 200)
        }
    }

    @Test(
        arguments: [
            ("localhost", true), ("::1", true), ("[::1]", true), ("127.0.0.1", true), ("127.255.3.9", true),
            ("127.attacker.example", false), ("127.0.0.1.nip.io", false), ("127.0.0", false), ("127.0.0.256", false),
            ("127.0.0.1x", false), ("127..0.1", false), ("128.0.0.1", false), ("0.0.0.0", false), ("", false),
            ("localhost.attacker.example", false)
        ])
    func loopbackIsLocalhostOrOneAndAddressesIn127(host: String, loopback: Bool) {
        #expect(ConsoleConfiguration.isLoopback(host) == loopback)
    }

    @Test func withoutATokenOnlyLocalHostNamesAreAnswered() async throws {
        // (`throws` said: the closure's only `try`s are inside #expect, which its inference does not see.)
        try await RunningConsole.with(serviceType: uniqueServiceType()) { console async throws in
            #expect(
                try await console.http.get("/api/sources", headers: ["Host": "attacker.example:7777"]).status == 403)
            // A name that only starts like a loopback address is another site's (DNS rebinding), not ours.
            #expect(
                try await console.http.get("/api/sources", headers: ["Host": "127.attacker.example:7777"]).status
                    == 403)
            #expect(
                try await console.http.get("/api/sources", headers: ["Host": "127.0.0.1.nip.io:7777"]).status == 403)
            #expect(
                try await console.http.get("/api/sources", headers: ["Host": "127.0.0.2:\(console.port)"]).status
                    == 200)
            #expect(
                try await console.http.get("/api/sources", headers: ["Host": "localhost:\(console.port)"]).status
                    == 200)
            #expect(
                try await console.http.get("/api/sources", headers: ["Host": "127.0.0.1:\(console.port)"]).status
                    == 200)
        }
        #expect(throws: ConsoleConfigurationError.self) {
            var configuration = ConsoleConfiguration(dataDirectory: "/tmp")
            configuration.host = "0.0.0.0"
            try configuration.validate()
        }
    }

    @Test func withTheSourcesSharedSecretTheConsoleFollowsASecuredSourceAndWithoutItSaysWhy() async throws {
        let service = uniqueServiceType()
        let secret = "the secret of the console tests, long enough"
        let sharedSecret = try SharedSecret(secret)
        let secured: (inout LogSourceConfiguration) -> Void = { $0.security = .sharedSecret(sharedSecret) }
        try await withSource(service, appName: "secured", configure: secured) { source in
            let logger = Logger(label: "secured") { source.handler(label: $0) }
            for n in 1...5 { logger.info("secret record \(n)") }
            try await source.start()
            // Without the secret: nothing is stored, and the sources say why.
            try await RunningConsole.with(serviceType: service) { outsider in
                var problem: String?
                for _ in 0..<200 where problem == nil {
                    problem = try await outsider.http.get("/api/sources").json()["problem"] as? String
                    if problem == nil { try await Task.sleep(for: .milliseconds(50)) }
                }
                #expect(problem?.contains("secret") == true, "\(problem ?? "no problem reported")")
                #expect((try await outsider.http.get("/api/records").json()["records"] as? [Any])?.isEmpty == true)
            }
            // With it (control): the records arrive.
            try await RunningConsole.with(
                serviceType: service, configure: { $0.viewer.security = .sharedSecret(sharedSecret) }
            ) { member in
                // (The source also logs, under its own label, that it turned the first console away.)
                let records = try await member.waitForRecords(5, query: "label=secured")
                #expect(records.map { $0["message"] as? String } == (1...5).map { "secret record \($0)" })
            }
        }
    }

    @Test func theLiveStreamSendsEachNewRecordOnceInOrder() async throws {
        let service = uniqueServiceType()
        try await withSource(service) { source in
            let logger = Logger(label: "stream.test") { source.handler(label: $0) }
            logger.info("before 1")
            try await source.start()
            try await RunningConsole.with(serviceType: service) { console in
                let first = try await console.waitForRecords(1)
                let lastID = try #require(first.last?["id"] as? Int)
                // Two streams: `live` records, and (the control) the `other` ones, which the first must not send.
                let (live, liveConnected) = Self.readStream(
                    console, "/api/stream?after=\(lastID)&q=live", until: "\"message\":\"live end\"")
                let (other, otherConnected) = Self.readStream(
                    console, "/api/stream?after=\(lastID)&q=other", until: "\"message\":\"other 20\"")
                #expect(
                    await eventually(timeout: .seconds(20)) {
                        liveConnected.withLockedValue { $0 } && otherConnected.withLockedValue { $0 }
                    })
                for n in 1...20 {
                    logger.info("live \(n)")
                    logger.info("other \(n)")
                }
                logger.info("live end")  // after every `other`: once it is read, an `other` sent would have been too
                let liveText = try await live.value
                let otherText = try await other.value
                #expect(Self.messages(liveText) == (1...20).map { "live \($0)" } + ["live end"])
                #expect(liveText.contains("event: records"))
                #expect(Self.messages(otherText) == (1...20).map { "other \($0)" })
            }
        }
    }

    @Test func anOrdinaryShutdownEndsTheLiveStreamsAndLogsNothingAtErrorLevel() async throws {
        let console = try await RunningConsole(serviceType: uniqueServiceType())
        try await withTeardown {
            // A live stream open (the page's), and a request answered, when the console stops.
            let (stream, connected) = Self.readStream(console, "/api/stream", until: "never in the stream", timeout: 60)
            #expect(await eventually(timeout: .seconds(20)) { connected.withLockedValue { $0 } })
            #expect(try await console.http.get("/api/status").status == 200)
            let started = ContinuousClock.now
            await console.stop()  // records an issue if anything was logged at error level
            // The stream ended with the console (the read stops when the server closes), not at its 60 s timeout.
            _ = try await stream.value
            #expect(ContinuousClock.now - started < .seconds(20))
            // Control: the server's own log lines reach the capture (it would have seen the shutdown error).
            #expect(console.log.lines.contains { $0.contains("Server started and listening") }, "\(console.log.lines)")
            #expect(console.errorLines.isEmpty, "\(console.errorLines)")
        } teardown: {
            await console.stop()
        }
    }

    @Test func recordsAreStoredExactlyOnceAcrossARestartOfTheConsole() async throws {
        let service = uniqueServiceType()
        let longHistory: (inout LogSourceConfiguration) -> Void = { $0.history = 100_000 }
        try await withSource(service, configure: longHistory) { source in
            let logger = Logger(label: "restart") { source.handler(label: $0) }
            for n in 1...300 { logger.info("first \(n)") }
            try await source.start()
            let directory = TestSupport.temporaryDirectory()
            try await RunningConsole.with(serviceType: service, dataDirectory: directory) { console in
                try await console.waitForRecords(300)
            }
            for n in 1...300 { logger.info("second \(n)") }
            try await RunningConsole.with(serviceType: service, dataDirectory: directory) { console in
                try await console.waitForRecords(600)
            }
            let store = try await ConsoleStore.open(path: directory + "/console.sqlite")
            try await withTeardown {
                let all = try await store.records(matching: RecordFilter(), page: .latest, limit: 1000).records
                #expect(all.map(\.record.sequence) == Array(1...600))
            } teardown: {
                await store.close()
            }
        }
    }

    /// Reads the live stream at `path` in the background until its text contains `marker` (or `timeout` seconds, or
    /// the server closes it); the flag turns true once the stream said it is connected.
    static func readStream(
        _ console: RunningConsole, _ path: String, until marker: String, timeout: Double = 30
    ) -> (Task<String, any Error>, NIOLockedValueBox<Bool>) {
        let connected = NIOLockedValueBox(false)
        let http = console.http
        let task = Task {
            try await http.read(path, timeout: timeout) { text in
                if text.contains(": connected") { connected.withLockedValue { $0 = true } }
                return text.contains(marker)
            }
        }
        return (task, connected)
    }

    /// The messages of the records in a live stream's text, in order.
    static func messages(_ text: String) -> [String] {
        text.components(separatedBy: "\"message\":\"").dropFirst().map { String($0.prefix { $0 != "\"" }) }
    }
}

/// Runs `body` with a log source on loopback (not started: `body` starts it once it has logged what it needs), and
/// stops the source whether `body` returned or threw.
func withSource(
    _ serviceType: String, appName: String = "inproc", configure: (inout LogSourceConfiguration) -> Void = { _ in },
    _ body: (LogSource) async throws -> Void
) async throws {
    let source = try makeSource(serviceType, appName: appName, configure: configure)
    try await withTeardown {
        try await body(source)
    } teardown: {
        await source.stop()
    }
}
