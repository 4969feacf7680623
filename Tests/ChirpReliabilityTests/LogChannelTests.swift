import Foundation
import Testing

/// A remote app logging through ChirpLogs with a spool (`logdemo --spool`, on h1) to a viewer (`chirp logs --json`,
/// on h2) whose host sleeps past the heartbeat timeout: every record arrives once, in order.
extension FaultTests {
    @Suite struct LogChannelTests {
        /// The `tick N` numbers of the records in `lines`, in arrival order.
        static func ticks(_ lines: [String]) -> [Int] {
            lines.compactMap { line -> Int? in
                guard let data = line.data(using: .utf8),
                    let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
                    object["event"] as? String == "record", let message = object["message"] as? String,
                    message.hasPrefix("tick ")
                else { return nil }
                return Int(message.dropFirst(5))
            }
        }

        @Test(.netns) func aSpooledLogChannelLosesNothingWhileItsViewerSleeps() async throws {
            let harness = try Harness(hosts: 2)
            defer { harness.tearDown() }
            let type = uniqueServiceType("g")
            let spool = TestSupport.temporaryDirectory()
            defer { try? FileManager.default.removeItem(atPath: spool) }
            // 100 records a second for 15 s; the viewer sleeps 8 s of it.
            let count = 1500
            let app = try await harness.start(
                on: "h1",
                [
                    binaryPath("logdemo"), "--name", "app", "--service", type, "--plain", "--rate", "100", "--count",
                    String(count), "--spool", spool
                ], name: "logdemo@h1")
            defer { app.kill() }
            let viewer = try await harness.start(
                on: "h2", [binaryPath("chirp"), "logs", "app", "--json", "--service", type], name: "chirp logs@h2")
            defer { viewer.kill() }
            try await viewer.waitForLine(timeout: .seconds(30), "the first tick at the viewer") {
                $0.contains("\"tick ")
            }

            let frozen = nowMs()
            try harness.run(["freeze", "h2"])
            defer { _ = try? harness.run(["thaw", "h2"]) }
            let asleepFor = 8_000 - (nowMs() - frozen)  // the length of the fault, not a settling pause
            if asleepFor > 0 { try await Task.sleep(for: .milliseconds(asleepFor)) }
            let mark = viewer.lineCount
            let thawed = nowMs()
            try harness.run(["thaw", "h2"])
            // The positive control of "across a drop": the viewer follows its source again (it printed nothing while
            // frozen, so a `following` line after the mark is a second one). Whether it also says `source-lost`
            // first depends on which side saw the old connection end: with dns_sd, one run had only `following`.
            try await viewer.waitForLine(from: mark, timeout: .seconds(30), "following again") {
                $0.contains("\"event\":\"following\"")
            }
            measure("logs.following-again-after-thaw", nowMs() - thawed)
            try await viewer.waitForLine(timeout: .seconds(60), "tick \(count) at the viewer") {
                $0.contains("\"tick \(count)\"")
            }
            let ticks = Self.ticks(viewer.lines)
            #expect(
                ticks == Array(1...count), "\(ticks.count) records; first out of place: \(firstMismatch(ticks, count))")
            #expect(!viewer.lines.contains { $0.contains("\"event\":\"lost\"") }, "the viewer reported records lost")
        }

        func firstMismatch(_ ticks: [Int], _ count: Int) -> String {
            for (index, tick) in ticks.enumerated() where tick != index + 1 { return "#\(index + 1) is \(tick)" }
            return ticks.count < count ? "missing after \(ticks.count)" : "none"
        }
    }
}
