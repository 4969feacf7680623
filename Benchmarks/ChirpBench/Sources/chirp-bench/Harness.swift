import Foundation

#if os(Linux)
/// Runs the benchmarks one after the other, prints one line per figure and writes the JSON results.
final class Harness {
    let options: Options
    /// This executable, spawned again for the peer roles.
    let executable: String
    /// Numbers one benchmark hands to another as a reference (e.g. the one-way sender CPU per message).
    var shared: [String: Double] = [:]
    /// Settings that differ between a full and a quick run.
    let plan: Plan

    struct Plan {
        /// Repetitions of each timed run.
        var runs: Int
        /// Target length of one throughput run, in seconds.
        var runSeconds: Double
        /// Round trips per latency run.
        var roundTrips: Int
        /// Process starts per start-up figure.
        var starts: Int
        /// Peers of the broadcast figure.
        var broadcastPeers: Int
    }

    init(options: Options) throws {
        self.options = options
        guard let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") else {
            throw BenchError("cannot find this executable (/proc/self/exe)")
        }
        executable = path
        plan =
            options.quick
            ? Plan(runs: 3, runSeconds: 0.25, roundTrips: 300, starts: 4, broadcastPeers: 16)
            : Plan(runs: 7, runSeconds: 1.0, roundTrips: 2000, starts: 12, broadcastPeers: 16)
    }

    var binDirectory: String { (executable as NSString).deletingLastPathComponent }

    func run() throws {
        let began = nowNanos()
        let machine = MachineInfo.current()
        var results = Results(
            date: ISO8601DateFormatter().string(from: Date()), label: options.label, quick: options.quick,
            machine: machine)
        print(
            "chirp-bench\(options.quick ? " (quick)" : ""): \(machine.cpus) CPUs (\(machine.cpuModel)), \(machine.memoryGiB) GiB, "
                + "load average \(machine.loadAverage.map { String(format: "%.2f", $0) }.joined(separator: " "))")
        print("each figure: median of runs [min..max, n=runs]; ratio = value / reference")
        fflush(nil)

        let benchmarks: [(String, () throws -> [Figure])] = [
            ("codec", codec),
            ("oneway", oneWayAndFriends),
            ("files", files),
            ("broadcast", broadcast),
            ("startup", startup),
            ("connect", connect),
            ("listrctl", listrctl),
            ("log", logCall),
            ("flood", flood),
            ("console", console)
        ]
        for (name, body) in benchmarks {
            // oneway, roundtrip and bulk share one pair of processes.
            let selected =
                name == "oneway" ? ["oneway", "roundtrip", "bulk"].contains(where: options.wants) : options.wants(name)
            guard selected else { continue }
            results.loadAtStart[name] = MachineInfo.loadAverage()
            do {
                for figure in try body() {
                    print(figure.line)
                    fflush(nil)
                    results.figures.append(figure)
                }
            } catch {
                let figure = Figure.pending(name: name, title: name, unit: "", goal: nil, note: "failed: \(error)")
                print(figure.line)
                fflush(nil)
                results.figures.append(figure)
            }
        }
        results.loadAtEnd = MachineInfo.loadAverage()
        results.seconds = Double(nowNanos() - began) / 1e9
        print(
            String(
                format: "done in %.0f s; load average at the end %@", results.seconds,
                results.loadAtEnd.map { String(format: "%.2f", $0) }.joined(separator: " ")))
        if let path = options.jsonPath {
            try write(results, to: path)
            print("results: \(path)")
        }
    }

    private func write(_ results: Results, to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        try encoder.encode(results).write(to: URL(fileURLWithPath: path))
    }

    /// How many items to send so that a run lasts about ``Plan/runSeconds``, given a measured rate.
    func itemsPerRun(rate: Double, minimum: Int, maximum: Int) -> Int {
        max(minimum, min(maximum, Int(rate * plan.runSeconds)))
    }
}
#endif
