import Chirp
import Foundation

#if os(Linux)
extension Harness {
    /// A fresh process that joins the service, connects to a peer that is already advertised, and exits: time from
    /// before its spawn to its "connected" line. Reference: the same executable printing that line at once.
    func startup() throws -> [Figure] {
        let serviceType = freshServiceType()
        let configuration = try Configuration.bench(serviceType: serviceType, name: "bench-advertised")
        let transceiver = Transceiver(configuration: configuration)
        try runBlocking {
            let events = transceiver.makeEvents()
            try await transceiver.start()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await event in events { if case .advertised = event { return } }
                }
                group.addTask {
                    try await Task.sleep(for: .seconds(20))
                    throw BenchError("the peer was not advertised within 20 s")
                }
                try await group.next()
                group.cancelAll()
            }
        }
        defer { try? runBlocking { await transceiver.shutdown() } }

        /// Milliseconds from spawn to the child's "connected" line, and the child's own count from its main().
        func start(role: String) throws -> (total: Double, inProcess: Double) {
            let begin = nowNanos()
            let child = try Child(executable, ["--role", role, "--service", serviceType])
            defer { child.stop(grace: 5) }
            guard let line = child.stdout?.next(timeout: 30, where: { $0.hasPrefix("connected") }) else {
                throw BenchError("\(role): no 'connected' line")
            }
            let inProcess = Double(line.text.split(separator: " ").last.flatMap { Double($0) } ?? 0) / 1e6
            return (Double(line.time - begin) / 1e6, inProcess)
        }
        /// Milliseconds from spawn to the first resolved line of `avahi-browse -rtp` for the same service (Avahi's
        /// own tool, on Avahi's own library): what discovery alone costs a fresh process here.
        func avahiBrowse() throws -> Double? {
            guard FileManager.default.isExecutableFile(atPath: "/usr/bin/avahi-browse") else { return nil }
            let begin = nowNanos()
            let child = try Child("/usr/bin/avahi-browse", ["-rtp", "_\(serviceType)._tcp"], stderr: .null)
            defer { child.stop(grace: 5) }
            guard let line = child.stdout?.next(timeout: 30, where: { $0.hasPrefix("=") }) else {
                throw BenchError("avahi-browse: no resolved line")
            }
            return Double(line.time - begin) / 1e6
        }
        _ = try start(role: "join")
        _ = try start(role: "join-cli")
        _ = try start(role: "noop")
        _ = try avahiBrowse()
        var browses: [Double] = []
        var joins: [Double] = []
        var inProcess: [Double] = []
        var clis: [Double] = []
        var cliInProcess: [Double] = []
        var noops: [Double] = []
        for _ in 0..<plan.starts {
            let join = try start(role: "join")
            joins.append(join.total)
            inProcess.append(join.inProcess)
            sleepSeconds(0.1)  // let the advertised peer see the joiner go
            let cli = try start(role: "join-cli")
            clis.append(cli.total)
            cliInProcess.append(cli.inProcess)
            noops.append(try start(role: "noop").total)
            if let browse = try avahiBrowse() { browses.append(browse) }
            sleepSeconds(0.1)
        }
        let browse = browses.isEmpty ? nil : Spread(browses).median
        let browseNote = browse.map { "; avahi-browse -rt resolves it in \(formatNumber($0)) ms (same run)" } ?? ""
        let reference = Figure.Reference(name: "process-start-noop", value: Spread(noops).median, spread: Spread(noops))
        return [
            Figure(
                name: "startup.connected",
                title: "process start to connected, peer already advertised (fresh process per run)",
                unit: "ms", samples: joins, reference: reference, goal: .atMost(30),
                note: "from main() to connected: \(formatNumber(Spread(inProcess).median)) ms\(browseNote)",
                details: ["mainToConnectedMillis": Spread(inProcess).median, "avahiBrowseMillis": browse ?? 0]),
            Figure(
                name: "startup.connected-cli",
                title:
                    "process start to connected, a process that does not advertise (advertises = false, as the CLIs)",
                unit: "ms", samples: clis, reference: reference, goal: .atMost(25),
                note: "from main() to connected: \(formatNumber(Spread(cliInProcess).median)) ms\(browseNote)",
                details: ["mainToConnectedMillis": Spread(cliInProcess).median, "avahiBrowseMillis": browse ?? 0])
        ]
    }
}
#endif
