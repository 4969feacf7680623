import Foundation
import Testing

@testable import ChirpLogs

@Suite(.timeLimit(.minutes(5))) struct HTTPPolicyTests {
    func exchange() -> HTTPExchange {
        HTTPExchange(
            method: "GET", url: "https://api.example.com/v2/items?page=2",
            requestHeaders: [
                HTTPHeader(name: "Authorization", value: "Bearer secret"), HTTPHeader(name: "cookie", value: "a=b"),
                HTTPHeader(name: "Proxy-Authorization", value: "Basic x"),
                HTTPHeader(name: "X-Api-Key", value: "k-123"),
                HTTPHeader(name: "Accept", value: "application/json")
            ],
            status: 200, responseHeaders: [HTTPHeader(name: "Set-Cookie", value: "session=s")],
            responseBody: HTTPBody(Data(String(repeating: "é", count: 100).utf8)))
    }

    @Test func sensitiveHeadersAreRedactedByDefault() {
        let sanitized = HTTPLogPolicy().sanitized(exchange())
        #expect(sanitized.requestHeader("authorization") == HTTPLogPolicy.redactedValue)
        #expect(sanitized.requestHeader("Cookie") == HTTPLogPolicy.redactedValue)
        #expect(sanitized.requestHeader("Proxy-Authorization") == HTTPLogPolicy.redactedValue)
        #expect(sanitized.responseHeader("set-cookie") == HTTPLogPolicy.redactedValue)
        #expect(sanitized.requestHeader("X-Api-Key") == "k-123")
        #expect(sanitized.requestHeader("Accept") == "application/json")
    }

    @Test func userConfiguredHeadersAreRedactedToo() {
        var policy = HTTPLogPolicy()
        policy.redactedHeaders.insert("X-API-KEY")
        #expect(policy.sanitized(exchange()).requestHeader("x-api-key") == HTTPLogPolicy.redactedValue)
    }

    @Test func bodiesAreCappedWithoutBreakingCharacters() throws {
        var policy = HTTPLogPolicy()
        policy.maximumBodyBytes = 51  // 25.5 "é": the cut must not split one
        let body = try #require(policy.sanitized(exchange()).responseBody)
        #expect(body.isTruncated)
        #expect(body.totalBytes == 200)
        #expect(body.data.count == 50)
        #expect(body.text == String(repeating: "é", count: 25))
    }

    @Test func allowListFilterAndSwitch() {
        var policy = HTTPLogPolicy()
        #expect(policy.admits(exchange()))
        policy.allowList = [HTTPAllowRule(host: "*.example.com", pathPrefix: "/v2/")]
        #expect(policy.admits(exchange()))
        policy.allowList = [HTTPAllowRule(host: "api.example.com", pathPrefix: "/v1/")]
        #expect(!policy.admits(exchange()))
        policy.allowList = []
        policy.filter = { $0.path != "/v2/items" }
        #expect(!policy.admits(exchange()))
        policy.filter = nil
        policy.isEnabled = false
        #expect(!policy.admits(exchange()))
    }

    @Test func reportAppliesThePolicyAndCanBeSwitchedAtRunTime() async throws {
        let source = try LogSource(configuration: LogSourceConfiguration(appName: "policy-test"))
        let stream = source.subscribe()
        #expect(source.report(exchange()))
        source.isHTTPCaptureEnabled = false
        #expect(!source.report(exchange()))
        source.isHTTPCaptureEnabled = true
        var failing = exchange()
        failing.status = 503
        #expect(source.report(failing))
        var received: [LogRecord] = []
        for await event in stream {
            if case .record(let record) = event { received.append(record) }
            if received.count == 2 { break }
        }
        #expect(received.map(\.http?.status) == [200, 503])
        #expect(received[0].http?.requestHeader("authorization") == HTTPLogPolicy.redactedValue)
        #expect(received.map(\.level) == [.info, .error])
        #expect(received[0].label == "http")
        #expect(received[0].message.hasPrefix("GET https://api.example.com/v2/items?page=2 -> 200"))
    }
}
