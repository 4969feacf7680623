import Foundation
import Logging
import Testing

@testable import ChirpLogs

@Suite(.timeLimit(.minutes(5))) struct FormattingTests {
    func record(
        level: Logger.Level = .info, label: String = "orders.api", message: String = "order placed",
        http: HTTPExchange? = nil
    ) -> LogRecord {
        LogRecord(
            sequence: 3, timestamp: Date(timeIntervalSince1970: 1_700_000_000.5), level: level, label: label,
            message: message, metadata: ["id": "17"], source: "Orders", file: "Orders/API.swift", function: "f()",
            line: 9, appName: "shop", host: "box", processID: 4242, http: http)
    }

    @Test func whatARemoteAppLoggedCannotForgeALineOrDriveTheTerminal() {
        let hostile = LogRecord(
            sequence: 1, timestamp: Date(timeIntervalSince1970: 1_700_000_000), level: .info,
            label: "api\u{1B}[2J", message: "ok\n12:00:00.000 critical shop[1] auth: FORGED\u{1B}]0;TITLE\u{07}",
            metadata: ["user\n": "x\r\ny"], source: "s", file: "f", function: "g", line: 1,
            appName: "shop\u{1B}[31m", host: "box", processID: 1, http: nil)
        for useColor in [false, true] {
            let line = LogFormatter(useColor: useColor).line(for: hostile)
            #expect(!line.contains("\n"), "one record, one line")
            // The positive control: the forged text is there, escaped; only the formatter's own colours use ESC.
            #expect(line.contains(#"ok\n12:00:00.000 critical shop[1] auth: FORGED\u{1B}]0;TITLE\u{7}"#))
            #expect(line.contains(#"shop\u{1B}[31m[1]"#))
            #expect(line.contains(#"api\u{1B}[2J:"#))
            #expect(line.contains(#"user\n=x\r\ny"#))
            if !useColor { #expect(!line.contains("\u{1B}")) }
        }
    }

    @Test func jsonWhoseIndentationWouldMultiplyItIsLeftAsText() throws {
        // 200 levels of arrays around 20,000 small values: each value would be indented by 400 bytes.
        let deep =
            String(repeating: "[", count: 200) + Array(repeating: "1", count: 20_000).joined(separator: ",")
            + String(repeating: "]", count: 200)
        #expect(JSONPrettyPrinter.format(deep) == nil)
        // Control: the same values at a shallow depth are printed (and stay within the growth allowed).
        let shallow = "[[" + Array(repeating: "{\"a\":1}", count: 20_000).joined(separator: ",") + "]]"
        let pretty = try #require(JSONPrettyPrinter.format(shallow))
        #expect(pretty.utf8.count <= shallow.utf8.count * JSONPrettyPrinter.maximumGrowth + 4096)
    }

    @Test func jsonIsPrettyPrintedWithNonASCIIAsText() throws {
        let pretty = try #require(
            JSONPrettyPrinter.format(
                #"{"name":"Zo\u00eb","city":"東京","emoji":"\ud83d\ude00","esc":"a\"b\\c\n","keep":"\u0007","n":-1.5e3,"list":[1,2],"empty":{},"deep":[{"a":null}]}"#
            ))
        #expect(
            pretty == """
                {
                  "name": "Zoë",
                  "city": "東京",
                  "emoji": "😀",
                  "esc": "a\\"b\\\\c\\n",
                  "keep": "\\u0007",
                  "n": -1.5e3,
                  "list": [1, 2],
                  "empty": {},
                  "deep": [
                    {
                      "a": null
                    }
                  ]
                }
                """)
        #expect(!pretty.contains("\\u00eb"))
        #expect(JSONPrettyPrinter.format("{\"a\":}") == nil)
        #expect(JSONPrettyPrinter.format("not json") == nil)
        #expect(JSONPrettyPrinter.format("[1,2] trailing") == nil)
        #expect(JSONPrettyPrinter.format(String(repeating: "[", count: 10_000)) == nil)
    }

    @Test func levelLabelAndRegexFilters() throws {
        var filter = LogFilter()
        filter.minimumLevel = .warning
        #expect(!filter.admits(record(level: .info)))
        #expect(filter.admits(record(level: .warning)) && filter.admits(record(level: .critical)))
        filter = LogFilter()
        filter.labels = ["orders.*", "auth"]
        #expect(filter.admits(record(label: "orders.api")))
        #expect(filter.admits(record(label: "auth")))
        #expect(!filter.admits(record(label: "authz")))
        #expect(!filter.admits(record(label: "payments")))
        #expect(LogFilter.glob("*.api", matches: "orders.api") && LogFilter.glob("o*s*i", matches: "orders.api"))
        filter = LogFilter()
        filter.pattern = try LogPattern("plac(ed)?")
        #expect(filter.admits(record()))
        #expect(!filter.admits(record(message: "shipped")))
        #expect(filter.admits(record(message: "shipped", http: HTTPExchange(method: "GET", url: "http://x/placed"))))
        #expect(throws: (any Error).self) { try LogPattern("(unclosed") }
        filter = LogFilter()
        filter.httpOnly = true
        #expect(!filter.admits(record()))
    }

    @Test func textLinesColourByLevelAndHighlightMatches() throws {
        let plain = LogFormatter(useColor: false).line(for: record())
        #expect(plain.hasSuffix("info     shop[4242] orders.api: order placed id=17"))
        #expect(!plain.contains("\u{1B}"))
        let colored = LogFormatter(useColor: true)
        #expect(colored.line(for: record(level: .warning)).contains("\u{1B}[33m"))
        #expect(colored.line(for: record(level: .error)).contains("\u{1B}[31m"))
        #expect(colored.line(for: record(level: .debug)).contains("\u{1B}[2m"))
        let highlighted = LogFormatter(useColor: true, highlight: try LogPattern("plac")).line(for: record())
        #expect(highlighted.contains("\u{1B}[7mplac\u{1B}[27m"))
        #expect(TextStyle.strip(highlighted) == plain)
        #expect(
            LogFormatter(useColor: false, showHost: true, localHost: "here").line(for: record()).contains(
                "shop[4242]@box"))
    }

    @Test func colourChoiceHonoursNoColorAndTerminals() {
        #expect(ColorChoice.auto.resolved(environment: [:], isTerminal: true))
        #expect(!ColorChoice.auto.resolved(environment: [:], isTerminal: false))
        #expect(!ColorChoice.auto.resolved(environment: ["NO_COLOR": "1"], isTerminal: true))
        #expect(ColorChoice.always.resolved(environment: ["NO_COLOR": "1"], isTerminal: false))
        #expect(!ColorChoice.never.resolved(environment: [:], isTerminal: true))
    }

    @Test func httpViews() throws {
        let exchange = HTTPExchange(
            method: "POST", url: "http://api.test/orders",
            requestHeaders: [HTTPHeader(name: "Authorization", value: HTTPLogPolicy.redactedValue)],
            requestBody: HTTPBody(Data(#"{"note":"Zo\u00eb"}"#.utf8)), status: 500,
            responseHeaders: [HTTPHeader(name: "Content-Type", value: "application/json")],
            responseBody: HTTPBody(Data(#"{"error":"down"}"#.utf8)), startTime: Date(), duration: 0.0123)
        let formatter = LogFormatter(useColor: false)
        let line = try #require(formatter.httpLine(for: record(http: exchange)))
        #expect(line.contains("POST   500   12.3 ms http://api.test/orders"))
        #expect(formatter.httpLine(for: record()) == nil)
        let detail = try #require(formatter.httpDetail(for: record(http: exchange)))
        #expect(detail.contains("> POST http://api.test/orders"))
        #expect(detail.contains("> Authorization: <redacted>"))
        #expect(detail.contains(#""note": "Zoë""#))
        #expect(detail.contains("< 500 Internal Server Error"))
        let colored = try #require(LogFormatter(useColor: true).httpLine(for: record(http: exchange)))
        #expect(colored.contains("\u{1B}[31m500"))
        var ok = exchange
        ok.status = 200
        #expect(try #require(LogFormatter(useColor: true).httpLine(for: record(http: ok))).contains("\u{1B}[32m200"))
    }

    /// Found by the log fuzz target: `\r\n` is one `Character`, so a body split into lines by `Character` kept it
    /// whole and the line after it was printed unindented, passing for a line of the formatter's own.
    @Test func httpDetailIndentsEveryLineOfABodyWithCRLF() throws {
        let body = "ok\r\n12:00:00.000 info     bank[1] auth: login as admin\r\n\n\u{1B}[2Jlast"
        let exchange = HTTPExchange(
            method: "GET", url: "http://api.test/x", status: 200, responseBody: HTTPBody(Data(body.utf8)))
        let detail = try #require(LogFormatter(useColor: false).httpDetail(for: record(http: exchange)))
        let lines = detail.split(separator: "\n", omittingEmptySubsequences: false)
        for line in lines {
            #expect(["── ", "> ", "< ", "  "].contains { line.hasPrefix($0) }, "\(line.debugDescription)")
        }
        #expect(lines.contains("  ok\\r"))
        #expect(lines.contains("  12:00:00.000 info     bank[1] auth: login as admin\\r"))
        #expect(lines.contains("  \\u{1B}[2Jlast"))
    }

    @Test func ndjsonEscapesDELC1SeparatorsAndBidiOverridesAsJSON() throws {
        let message = "a\u{7F}b\u{9B}31mc\u{2028}d\u{2029}e\u{202E}f\u{2066}g é東\u{2014}\u{A9}"
        let line = LogJSON.line(for: record(message: message))
        #expect(line.contains(#"a\u007fb\u009b31mc\u2028d\u2029e\u202ef\u2066g é東"#), "\(line)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["message"] as? String == message)  // the value is what the app logged, exactly
    }

    @Test func ndjsonParsesAndKeepsNonASCII() throws {
        let exchange = HTTPExchange(
            method: "GET", url: "http://api.test/x", status: 200, responseBody: HTTPBody(Data([0xff, 0x00])))
        for record in [record(message: "Zoë \"quoted\"\nnext line\u{1}"), record(http: exchange)] {
            let line = LogJSON.line(for: record)
            #expect(!line.contains("\n"))
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(object["event"] as? String == "record")
            #expect(object["seq"] as? Int == 3)
            #expect(object["app"] as? String == "shop")
            #expect(object["message"] as? String == record.message)
            #expect((object["metadata"] as? [String: Any])?["id"] as? String == "17")
            if record.http != nil {
                let http = try #require(object["http"] as? [String: Any])
                #expect(http["status"] as? Int == 200)
                #expect(((http["response"] as? [String: Any])?["body_base64"] as? String) == "/wA=")
            } else {
                #expect(line.contains("Zoë"))
            }
        }
        let notice = LogJSON.notice(
            "lost", source: LogSourceInfo(appName: "a", host: "h", processID: 1, streamID: "s", peerID: "p"),
            loss: LogLoss(from: 5, through: 9, reason: "buffer full"))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(notice.utf8)) as? [String: Any])
        #expect(object["count"] as? Int == 5)
    }
}
