import Foundation

#if os(Linux)
/// The pyzmq anchors (Benchmarks/pyzmq-anchor.py): the same small JSON messages through ZeroMQ, measured in the same
/// run as Chirp's figures, so a figure can be read against the library users compare Chirp with.
///
/// `make bench` installs pyzmq into a virtual environment (`.build/bench-venv`) and names its interpreter in
/// `CHIRP_BENCH_PYTHON`. Without it (chirp-bench run by hand, no PyPI), the figures are printed without the anchor.
enum PyZMQ {
    enum Mode: String {
        /// PUSH/PULL with json.dumps / json.loads per message: msg/s per run.
        case oneway
        /// REQ/REP with json both ways: the median round trip per run, in µs.
        case reqrep
    }

    /// The anchor's reference, or `nil` with the reason when it cannot be measured here.
    static func measure(_ mode: Mode, count: Int, runs: Int) -> Result<Figure.Reference, BenchError> {
        let environment = ProcessInfo.processInfo.environment
        let python = environment["CHIRP_BENCH_PYTHON"] ?? ".build/bench-venv/bin/python3"
        let script = environment["CHIRP_BENCH_PYZMQ_SCRIPT"] ?? "Benchmarks/pyzmq-anchor.py"
        guard FileManager.default.isExecutableFile(atPath: python), FileManager.default.fileExists(atPath: script)
        else {
            return .failure(BenchError("no pyzmq anchor: \(python) or \(script) is missing (make bench installs it)"))
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [script, mode.rawValue, String(count), String(runs)]
        let output = Pipe()
        process.standardOutput = output
        do {
            try process.run()
        } catch {
            return .failure(BenchError("the pyzmq anchor did not start: \(error)"))
        }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        struct Answer: Decodable {
            var samples: [Double]
            var pyzmq: String
        }
        guard process.terminationStatus == 0, let answer = try? JSONDecoder().decode(Answer.self, from: data),
            !answer.samples.isEmpty
        else {
            return .failure(BenchError("the pyzmq anchor failed (exit \(process.terminationStatus))"))
        }
        let spread = Spread(answer.samples)
        let name = mode == .oneway ? "pyzmq-push-pull-json" : "pyzmq-req-rep-json"
        return .success(Figure.Reference(name: name, value: spread.median, spread: spread))
    }
}
#endif

#if os(Linux)
extension Result where Failure == BenchError {
    /// Why the anchor is missing, for a figure's note; empty when it was measured.
    var failureText: String {
        if case .failure(let error) = self { return error.description }
        return ""
    }
}
#endif
