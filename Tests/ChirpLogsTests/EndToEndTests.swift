import Foundation
import Testing

#if canImport(Glibc)
import Glibc
import ChirpTestSupport
#endif

/// `logdemo` and `chirp logs` as real processes, discovering each other through the real avahi-daemon (loopback).
/// Serialized: each test starts several processes, and the machine has two cores.
@Suite(.serialized, .timeLimit(.minutes(10)))
struct EndToEndTests {
    let chirp = binaryPath("chirp")
    let logdemo = binaryPath("logdemo")

    private func startDemo(_ service: String, _ extra: [String]) async throws -> TestProcess {
        let demo = try await TestProcess(logdemo, ["--service", service, "--interface", "lo"] + extra)
        let ready = await demo.waitFor { $0.contains { $0.contains("streaming logs on port") } }
        #expect(ready, "logdemo did not start: \(demo.standardError)")
        return demo
    }

    private func viewer(_ service: String, _ extra: [String]) async throws -> TestProcess {
        try await TestProcess(chirp, ["logs", "--service", service, "--interface", "lo"] + extra)
    }

    @Test("a late viewer gets the history, then live records, with no gap and no duplicate at the seam")
    func historyToLiveSeam() async throws {
        let service = uniqueServiceType()
        // --echo: its records on standard error too, each line ending in its message ("tick N").
        let demo = try await startDemo(
            service, ["--name", "seam", "--plain", "--rate", "1000", "--history", "500", "--echo"])
        // The app has logged well past its history (twice over) before the viewer arrives.
        #expect(
            await demo.waitForError(containing: "tick 1000\n", timeout: .seconds(60)),
            "logdemo never logged its 1000th record: \(demo.standardError.suffix(2000))")
        let view = try await viewer(service, ["--json"])
        let crossed = await view.waitFor(timeout: .seconds(30)) { lines in
            let seqs = TestSupport.sequences(lines)
            guard let first = seqs.first, let last = seqs.last else { return false }
            return last >= first + 2000
        }
        #expect(crossed, "viewer stderr: \(view.standardError)")
        let seqs = TestSupport.sequences(view.lines)
        let first = try #require(seqs.first)
        // 1000 records or more were logged before it started: it starts within the last 500 of them.
        #expect(first > 500, "a late viewer starts with the recent history, not the first record: \(first)")
        #expect(seqs == Array(first..<(first + seqs.count)), "sequence numbers are contiguous: no gap, no duplicate")
        #expect(!view.lines.contains { $0.contains(#""event":"lost""#) })
        await view.stop()
        await demo.stop()
    }

    @Test("a frozen viewer keeps the app's memory bounded, and the drop count reaches the viewer afterwards")
    func stalledViewer() async throws {
        let service = uniqueServiceType()
        let demo = try await startDemo(service, ["--name", "busy", "--plain", "--rate", "20000", "--buffer", "4096"])
        let view = try await viewer(service, ["--json"])
        #expect(await view.waitFor { TestSupport.sequences($0).count > 1000 }, "viewer stderr: \(view.standardError)")
        let baseline = try #require(demo.residentKiB)
        view.signal(SIGSTOP)
        var peak = baseline
        // Frozen for longer than the heartbeat timeout, while the app keeps logging 20,000 records a second.
        for _ in 0..<30 {
            try await Task.sleep(for: .milliseconds(200))
            peak = max(peak, demo.residentKiB ?? 0)
        }
        let linesBeforeResume = view.lines.count
        view.signal(SIGCONT)
        #expect(
            peak - baseline < 64 * 1024,
            "app memory grew from \(baseline) KiB to \(peak) KiB while the viewer was frozen")
        let told = await view.waitFor(timeout: .seconds(20)) { lines in
            lines.dropFirst(linesBeforeResume).contains { line in
                guard line.contains(#""event":"lost""#),
                    let object = TestSupport.objects([line]).first, let count = object["count"] as? NSNumber
                else { return false }
                return count.intValue > 0
            }
        }
        let notices = view.lines.dropFirst(linesBeforeResume).filter { !$0.contains(#""event":"record""#) }.prefix(5)
        #expect(
            told, "the viewer was told how many records were lost; notices: \(notices); stderr: \(view.standardError)")
        // And it goes on with live records after the loss.
        let lostThrough =
            TestSupport.objects(view.lines).last { $0["event"] as? String == "lost" }?["through"] as? NSNumber
        let resumed = await view.waitFor { lines in
            (TestSupport.sequences(lines).last ?? 0) > (lostThrough?.intValue ?? 0)
        }
        #expect(resumed)
        await view.stop()
        await demo.stop()
    }

    @Test("spool: the app is SIGKILLed mid-stream and restarted; the viewer gets every sequence number exactly once")
    func spoolSurvivesCrash() async throws {
        let service = uniqueServiceType()
        let spool = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: spool) }
        let arguments = ["--name", "durable", "--plain", "--rate", "500", "--spool", spool]
        let first = try await startDemo(service, arguments)
        let view = try await viewer(service, ["--json"])
        #expect(
            await view.waitFor { (TestSupport.sequences($0).last ?? 0) >= 300 }, "viewer stderr: \(view.standardError)")
        first.signal(SIGKILL)
        _ = try? await first.waitForExit()
        #expect(await view.waitFor { $0.contains { $0.contains(#""event":"source-lost""#) } })
        let beforeRestart = TestSupport.sequences(view.lines).last ?? 0

        let second = try await startDemo(service, arguments)
        #expect(
            await view.waitFor(timeout: .seconds(30)) { (TestSupport.sequences($0).last ?? 0) >= beforeRestart + 300 },
            "viewer stderr: \(view.standardError)")
        let seqs = TestSupport.sequences(view.lines)
        let last = try #require(seqs.last)
        #expect(seqs == Array(1...last), "every sequence number from 1 to \(last) exactly once, in order")
        #expect(!view.lines.contains { $0.contains(#""event":"lost""#) })
        let following = TestSupport.objects(view.lines).filter { $0["event"] as? String == "following" }
        #expect(following.count == 2)
        #expect(
            Set(following.compactMap { $0["stream"] as? String }).count == 1,
            "the restarted app continues the same stream")
        await view.stop()
        await second.stop()
    }

    @Test(
        "chirp logs against logdemo: text, --http --detail (redacted, pretty non-ASCII JSON), --json, filters, app selection"
    )
    func viewerAgainstLogDemo() async throws {
        let service = uniqueServiceType()
        // A history that holds everything they log before the runs below connect, however slow they are.
        let shop = try await startDemo(
            service, ["--name", "shop", "--rate", "100", "--http-interval", "0.1", "--history", "10000"])
        let other = try await startDemo(
            service, ["--name", "other", "--rate", "20", "--http-interval", "0", "--history", "10000"])
        // Both build up history: the runs below need a hundred records of shop, a round of its HTTP scenarios (all five,
        // 200, 404 and 500 among them) and a record of other. A viewer that follows both shows when they are there.
        let probe = try await viewer(service, ["--json"])
        let builtUp = await probe.waitFor(timeout: .seconds(60)) { lines in
            let records = TestSupport.objects(lines).filter { $0["event"] as? String == "record" }
            let shopRecords = records.filter { $0["app"] as? String == "shop" }
            let statuses = shopRecords.compactMap { ($0["http"] as? [String: Any])?["status"] as? Int }
            return shopRecords.count >= 100 && statuses.count >= 5 && Set([200, 404, 500]).isSubset(of: statuses)
                && records.contains { $0["app"] as? String == "other" }
        }
        #expect(builtUp, "the apps' history did not build up: \(probe.transcript.suffix(3000))")
        await probe.stop()

        // Every run at once, each looking for sources for 10 s (generous on a loaded machine: both apps must be found
        // in that time) before it prints their history and exits.
        func start(_ arguments: [String], environment: [String: String?] = [:]) async throws -> TestProcess {
            try await TestProcess(
                chirp, ["logs", "--service", service, "--interface", "lo", "--no-follow", "--wait", "10"] + arguments,
                environment: environment)
        }
        let runs = [
            ["shop"], ["shop", "--http", "--detail"], ["shop", "--http"], ["--json"],
            ["shop", "--json", "--level", "error"], ["shop", "--json", "--label", "demo.auth"],
            ["shop", "--grep", "declin(ed)?", "--color", "always"]
        ]
        var started: [TestProcess] = []
        for arguments in runs { started.append(try await start(arguments)) }
        let noColor = try await start(["shop", "--color", "auto"], environment: ["NO_COLOR": "1"])
        for (process, arguments) in zip(started + [noColor], runs + [["shop", "--color", "auto"]]) {
            let status = try? await process.waitForExit(timeout: .seconds(60))
            #expect(
                status == 0, "chirp logs \(arguments) exited \(String(describing: status)): \(process.standardError)")
        }
        let (text, detail, api, json, errors, auth, grep) = (
            started[0], started[1], started[2], started[3], started[4], started[5], started[6]
        )

        // Plain text of one app: its records only, no colours when not a terminal.
        #expect(text.lines.count > 50)
        #expect(text.lines.allSatisfy { $0.contains("shop[") })
        #expect(!text.lines.joined().contains("\u{1B}["))
        #expect(text.standardError.contains("following shop["))

        // The API view in full: redacted credentials, pretty-printed JSON with non-ASCII text as text.
        let output = detail.lines.joined(separator: "\n")
        #expect(output.contains("> GET http://127.0.0.1:"))
        #expect(output.contains("Authorization: <redacted>"))
        #expect(output.contains("Set-Cookie: <redacted>"))
        #expect(!output.contains("demo-secret-token"))
        #expect(!output.contains("demo-session-cookie"))
        #expect(output.contains(#""name": "寿司""#))
        #expect(output.contains("Crème brûlée"))
        #expect(!output.contains("\\u"))
        #expect(output.contains("< 404 Not Found"))
        #expect(output.contains("< 500 Internal Server Error"))

        // One line per exchange.
        #expect(api.lines.count >= 5)
        #expect(api.lines.allSatisfy { $0.contains(" http://127.0.0.1:") })
        #expect(api.lines.contains { $0.contains(" 404 ") } && api.lines.contains { $0.contains(" 200 ") })

        // NDJSON: every line parses; records carry their fields; HTTP records their exchange.
        let objects = TestSupport.objects(json.lines)
        #expect(objects.count == json.lines.count, "every --json line is a JSON object")
        let records = objects.filter { $0["event"] as? String == "record" }
        #expect(Set(records.compactMap { $0["app"] as? String }) == ["shop", "other"])
        #expect(records.allSatisfy { $0["seq"] is NSNumber && $0["level"] is String && $0["time"] is String })
        let exchanges = records.compactMap { $0["http"] as? [String: Any] }
        #expect(!exchanges.isEmpty)
        let headers = exchanges.compactMap { ($0["request"] as? [String: Any])?["headers"] as? [String: String] }
        #expect(headers.contains { $0["Authorization"] == "<redacted>" })

        // Filters: level, label, regular expression (with highlighting when colours are forced).
        let levels = Set(TestSupport.objects(errors.lines).compactMap { $0["level"] as? String })
        #expect(!levels.isEmpty && levels.isSubset(of: ["error", "critical"]))
        let labels = Set(
            TestSupport.objects(auth.lines).filter { $0["event"] as? String == "record" }.compactMap {
                $0["label"] as? String
            })
        #expect(labels == ["demo.auth"])
        #expect(!grep.lines.isEmpty)
        #expect(grep.lines.allSatisfy { $0.contains("\u{1B}[7m") && $0.contains("declin") })
        #expect(!noColor.lines.isEmpty && !noColor.lines.joined().contains("\u{1B}["))

        await shop.stop()
        await other.stop()
    }

    @Test("--connect HOST:PORT follows one source without discovery, announces it lost, and follows it again")
    func connectFollowsAgain() async throws {
        let service = uniqueServiceType()
        let port = TestSupport.freePort()
        let arguments = ["--name", "direct", "--plain", "--rate", "50", "--port", String(port)]
        let first = try await startDemo(service, arguments)
        let view = try await viewer(service, ["--json", "--connect", "127.0.0.1:\(port)"])
        #expect(await view.waitFor { TestSupport.sequences($0).count >= 10 }, "viewer stderr: \(view.standardError)")
        first.signal(SIGTERM)
        _ = try? await first.waitForExit()
        #expect(await view.waitFor { $0.contains { $0.contains(#""event":"source-lost""#) } })
        // Standard error is a pipe of its own: its line may come after the JSON one.
        #expect(await view.waitForError(containing: "-- lost direct["), "\(view.transcript)")

        let second = try await startDemo(service, arguments)
        let pid = String(second.pid)
        let again = await view.waitFor { lines in
            TestSupport.objects(lines).contains {
                $0["event"] as? String == "record" && ($0["pid"] as? NSNumber)?.stringValue == pid
            }
        }
        #expect(again, "records of the restarted source arrive; stderr: \(view.standardError)")
        await view.stop()
        await second.stop()
    }
}
