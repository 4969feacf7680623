import Foundation

#if os(Linux)
extension Harness {
    /// The cost of one `logger.info`. The Chirp log channel (ChirpLogs) is not on this branch yet, so its figures
    /// are pending; the reference, swift-log's StreamLogHandler writing to /dev/null, is measured in a child process
    /// whose standard error is /dev/null.
    func logCall() throws -> [Figure] {
        let batches = options.quick ? 3 : plan.runs
        let child = try Child(executable, ["--role", "log-ref", "--count", options.quick ? "20000" : "100000", "--batches", "\(batches)"],
                              stdout: .pipe, stderr: .null)
        defer { child.stop() }
        var samples: [Double] = []
        for _ in 0..<batches {
            guard let line = child.stdout?.next(timeout: 60, where: { $0.hasPrefix("batch ") }),
                  let nanos = Double(line.text.dropFirst(6))
            else { throw BenchError("log-ref: no result") }
            samples.append(nanos)
        }
        let reference = Figure.Reference(name: "StreamLogHandler-to-/dev/null", value: Spread(samples).median, spread: Spread(samples))
        return [
            .pending(name: "log.info", title: "one logger.info with the Chirp log handler and a viewer attached", unit: "ns",
                     goal: .atMost(1000), note: "ChirpLogs is not on this branch; reference = mean per call over batches",
                     reference: reference),
            .pending(name: "log.stream", title: "log streaming to one viewer, none dropped", unit: "records/s",
                     goal: .atLeast(200_000), note: "ChirpLogs is not on this branch"),
        ]
    }
}
#endif
