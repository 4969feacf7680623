import Chirp
import ChirpLogs
import ChirpTestSupport
import Foundation
import Logging
import Testing

@testable import ChirpConsole

/// The console's server over real HTTP on loopback, fed by a real log source through the avahi-daemon.
@Suite(.serialized) struct ConsoleServerTests {
    @Test func recordsOfASourceReachTheAPIWithTheirFilters() async throws {
        let service = uniqueServiceType()
        let source = try makeSource(service, appName: "orders")
        let logger = Logger(label: "orders.main") { source.handler(label: $0) }
        for n in 1...50 { logger.info("order \(n) placed", metadata: ["n": "\(n)"]) }
        logger.error("payment declined", metadata: ["code": "card_declined"])
        source.report(
            HTTPExchange(
                method: "POST", url: "http://127.0.0.1:9/orders", requestBody: HTTPBody(Data(#"{"item":2}"#.utf8)),
                status: 500, duration: 0.012))
        try await source.start()
        let console = try await RunningConsole(serviceType: service)

        let all = try await console.waitForRecords(52)
        #expect(all.count == 52)
        #expect(all.first?["app"] as? String == "orders")
        let errors = try await console.http.get("/api/records?level=error").json()["records"] as? [[String: Any]] ?? []
        #expect(errors.map { $0["message"] as? String } == ["payment declined", "POST /orders"] || errors.count == 2)
        #expect(errors.allSatisfy { ["error", "critical"].contains($0["level"] as? String ?? "") } && !errors.isEmpty)
        let search = try await console.http.get("/api/records?q=order+17").json()["records"] as? [[String: Any]] ?? []
        #expect(search.map { $0["message"] as? String } == ["order 17 placed"])
        let exchanges = try await console.http.get("/api/records?http=1").json()["records"] as? [[String: Any]] ?? []
        let http = try #require(exchanges.first?["http"] as? [String: Any])
        #expect(http["method"] as? String == "POST")
        #expect(http["status"] as? Int == 500)
        #expect(http["requestBody"] as? String == #"{"item":2}"#)
        let endpoints = try await console.http.get("/api/endpoints").json()["endpoints"] as? [[String: Any]] ?? []
        #expect(endpoints.first?["path"] as? String == "/orders")
        #expect(endpoints.first?["errorRate"] as? Double == 1)
        let sources = try await console.http.get("/api/sources").json()["sources"] as? [[String: Any]] ?? []
        #expect(sources.first?["live"] as? Bool == true)
        #expect(sources.first?["records"] as? Int == 52)

        await console.stop()
        await source.stop()
    }

    @Test func badParametersAreRefusedWithAReason() async throws {
        let console = try await RunningConsole(serviceType: uniqueServiceType())
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
        await console.stop()
    }

    @Test func thePageComesWithAPolicyThatRunsNoInlineScript() async throws {
        let console = try await RunningConsole(serviceType: uniqueServiceType())
        let page = try await console.http.get("/")
        #expect(page.status == 200)
        #expect(page.header("content-type")?.hasPrefix("text/html") == true)
        let policy = try #require(page.header("content-security-policy"))
        #expect(
            policy.contains("script-src 'self'") && !policy.contains("unsafe-inline") && !policy.contains("unsafe-eval")
        )
        #expect(page.header("x-content-type-options") == "nosniff")
        #expect(!page.body.contains("<script>") && page.body.contains("/assets/console.js"))
        #expect(try await console.http.get("/assets/console.js").status == 200)
        #expect(try await console.http.get("/assets/console.css").header("content-type")?.hasPrefix("text/css") == true)
        #expect(try await console.http.get("/assets/../Package.swift").status == 404)
        #expect(try await console.http.get("/assets/nothing.js").status == 404)
        await console.stop()
    }

    @Test func aTokenIsCheckedOnEveryRequestAndTheLiveStream() async throws {
        let token = "a-token-of-the-tests-0123456789"
        let console = try await RunningConsole(serviceType: uniqueServiceType(), token: token)
        #expect(try await console.http.get("/api/sources").status == 401)
        #expect(try await console.http.get("/").status == 401)
        #expect(try await console.http.get("/api/stream").status == 401)
        #expect(
            try await console.http.get("/api/sources", headers: ["Authorization": "Bearer wrong-token-0123456789"])
                .status == 401)
        #expect(try await console.http.get("/api/sources?token=wrong").status == 401)
        // Control: the right token, each way.
        #expect(try await console.http.get("/api/sources", headers: ["Authorization": "Bearer \(token)"]).status == 200)
        let viaQuery = try await console.http.get("/?token=\(token)")
        #expect(viaQuery.status == 200)
        let cookie = try #require(viaQuery.header("set-cookie")?.split(separator: ";").first.map(String.init))
        #expect(try await console.http.get("/assets/console.js", headers: ["Cookie": cookie]).status == 200)
        await console.stop()
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
        let console = try await RunningConsole(serviceType: uniqueServiceType())
        #expect(try await console.http.get("/api/sources", headers: ["Host": "attacker.example:7777"]).status == 403)
        // A name that only starts like a loopback address is another site's (DNS rebinding), not ours.
        #expect(
            try await console.http.get("/api/sources", headers: ["Host": "127.attacker.example:7777"]).status == 403)
        #expect(try await console.http.get("/api/sources", headers: ["Host": "127.0.0.1.nip.io:7777"]).status == 403)
        #expect(
            try await console.http.get("/api/sources", headers: ["Host": "127.0.0.2:\(console.port)"]).status == 200)
        #expect(
            try await console.http.get("/api/sources", headers: ["Host": "localhost:\(console.port)"]).status == 200)
        #expect(
            try await console.http.get("/api/sources", headers: ["Host": "127.0.0.1:\(console.port)"]).status == 200)
        await console.stop()
        #expect(throws: ConsoleConfigurationError.self) {
            var configuration = ConsoleConfiguration(dataDirectory: "/tmp")
            configuration.host = "0.0.0.0"
            try configuration.validate()
        }
    }

    @Test func withTheSourcesSharedSecretTheConsoleFollowsASecuredSourceAndWithoutItSaysWhy() async throws {
        let service = uniqueServiceType()
        let secret = "the secret of the console tests, long enough"
        let source = try makeSource(service, appName: "secured") {
            $0.security = .sharedSecret(try! SharedSecret(secret))
        }
        let logger = Logger(label: "secured") { source.handler(label: $0) }
        for n in 1...5 { logger.info("secret record \(n)") }
        try await source.start()
        // Without the secret: nothing is stored, and the sources say why.
        let outsider = try await RunningConsole(serviceType: service)
        var problem: String?
        for _ in 0..<200 where problem == nil {
            problem = try await outsider.http.get("/api/sources").json()["problem"] as? String
            if problem == nil { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(problem?.contains("secret") == true, "\(problem ?? "no problem reported")")
        #expect((try await outsider.http.get("/api/records").json()["records"] as? [Any])?.isEmpty == true)
        await outsider.stop()
        // With it (control): the records arrive.
        let member = try await RunningConsole(serviceType: service) {
            $0.viewer.security = .sharedSecret(try! SharedSecret(secret))
        }
        // (The source also logs, under its own label, that it turned the first console away.)
        let records = try await member.waitForRecords(5, query: "label=secured")
        #expect(records.map { $0["message"] as? String } == (1...5).map { "secret record \($0)" })
        await member.stop()
        await source.stop()
    }

    @Test func theLiveStreamSendsEachNewRecordOnceInOrder() async throws {
        let service = uniqueServiceType()
        let source = try makeSource(service)
        let logger = Logger(label: "stream.test") { source.handler(label: $0) }
        logger.info("before 1")
        try await source.start()
        let console = try await RunningConsole(serviceType: service)
        let first = try await console.waitForRecords(1)
        let lastID = try #require(first.last?["id"] as? Int)
        let reading = Task {
            try await console.http.read("/api/stream?after=\(lastID)&q=live", timeout: 30) { text in
                text.components(separatedBy: "\"message\":\"live ").count - 1 >= 20
            }
        }
        try await Task.sleep(for: .milliseconds(300))
        for n in 1...20 {
            logger.info("live \(n)")
            logger.info("other \(n)")  // filtered out by q=live
        }
        let text = try await reading.value
        let messages = text.components(separatedBy: "\"message\":\"").dropFirst().map { $0.prefix { $0 != "\"" } }
        #expect(messages == (1...20).map { "live \($0)"[...] })
        #expect(text.contains("event: records"))
        await console.stop()
        await source.stop()
    }

    @Test func recordsAreStoredExactlyOnceAcrossARestartOfTheConsole() async throws {
        let service = uniqueServiceType()
        let source = try makeSource(service) { $0.history = 100_000 }
        let logger = Logger(label: "restart") { source.handler(label: $0) }
        for n in 1...300 { logger.info("first \(n)") }
        try await source.start()
        let directory = TestSupport.temporaryDirectory()
        var console = try await RunningConsole(serviceType: service, dataDirectory: directory)
        try await console.waitForRecords(300)
        await console.stop()
        for n in 1...300 { logger.info("second \(n)") }
        console = try await RunningConsole(serviceType: service, dataDirectory: directory)
        try await console.waitForRecords(600)
        let store = try await ConsoleStore.open(path: directory + "/console.sqlite")
        let all = try await store.records(matching: RecordFilter(), page: .latest, limit: 1000).records
        #expect(all.map(\.record.sequence) == Array(1...600))
        await store.close()
        await console.stop()
        await source.stop()
    }
}
