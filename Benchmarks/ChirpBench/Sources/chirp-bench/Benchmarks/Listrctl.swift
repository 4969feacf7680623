import Foundation

#if os(Linux)
extension Harness {
    /// `listrctl item list` against a running `listr` with 20 items, process start to exit (the binaries next to this
    /// one, built in the same configuration). Reference: `listrctl --help`, which is process start-up alone.
    func listrctl() throws -> [Figure] {
        let listr = binDirectory + "/listr"
        let listrctl = binDirectory + "/listrctl"
        guard FileManager.default.isExecutableFile(atPath: listr),
            FileManager.default.isExecutableFile(atPath: listrctl)
        else {
            return [
                .pending(
                    name: "listrctl.list", title: "listrctl item list", unit: "ms", goal: .atMost(50),
                    note: "listr/listrctl not built next to chirp-bench (swift build -c release --product listrctl)")
            ]
        }
        let serviceType = freshServiceType()
        let directory = NSTemporaryDirectory() + "chirp-bench-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let app = try Child(
            listr, ["--store", directory + "/store.json", "--name", "bench", "--service", serviceType, "--loopback"],
            stdout: .null, stderr: .pipe)
        defer {
            kill(app.pid, SIGTERM)
            if app.wait(timeout: 5) == nil {
                kill(app.pid, SIGKILL)
                app.wait()
            }
        }
        guard app.stderr?.next(timeout: 30, where: { $0.contains("ready:") }) != nil else {
            throw BenchError("listr did not get ready: \(app.stderr?.text ?? "")")
        }
        let common = ["--service", serviceType, "--loopback", "--timeout", "10"]
        for index in 1...20 {
            let add = try Child(
                listrctl, ["item", "add", "item number \(index)"] + common, stdout: .null, stderr: .null)
            guard add.wait() == 0 else { throw BenchError("listrctl item add failed") }
        }

        /// Milliseconds from spawn to exit of `listrctl arguments`.
        func time(_ arguments: [String]) throws -> Double {
            let start = nowNanos()
            let child = try Child(listrctl, arguments, stdout: .null, stderr: .null)
            let status = child.wait()
            guard status == 0 else {
                throw BenchError("listrctl \(arguments.joined(separator: " ")) exited with \(status)")
            }
            return Double(nowNanos() - start) / 1e6
        }
        let list = ["item", "list"] + common
        let listPeer = list + ["--peer", "bench"]
        let help = ["--help"]
        for _ in 0..<3 {
            _ = try time(list)
            _ = try time(listPeer)
            _ = try time(help)
        }
        var lists: [Double] = []
        var listPeers: [Double] = []
        var helps: [Double] = []
        for _ in 0..<(options.quick ? 5 : 20) {  // interleaved, so a change in load hits all three alike
            lists.append(try time(list))
            listPeers.append(try time(listPeer))
            helps.append(try time(help))
        }
        let reference = Figure.Reference(name: "listrctl--help", value: Spread(helps).median, spread: Spread(helps))
        return [
            Figure(
                name: "listrctl.list", title: "listrctl item list against a running listr (20 items), start to exit",
                unit: "ms", samples: lists, reference: reference, goal: .atMost(50)),
            Figure(
                name: "listrctl.list-peer", title: "listrctl item list --peer bench (no settle window), start to exit",
                unit: "ms", samples: listPeers, reference: reference)
        ]
    }
}
#endif
