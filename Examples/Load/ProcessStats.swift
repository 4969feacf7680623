import Foundation

/// What this process uses, from /proc and getrusage.
enum ProcessStats {
    /// Resident set size in KiB (/proc/self/status, VmRSS); 0 where it cannot be read.
    static func rssKiB() -> Int { field("VmRSS:", in: "/proc/self/status") }

    /// Proportional set size in KiB (/proc/self/smaps_rollup, Pss): shared pages split between the processes that
    /// map them; 0 where it cannot be read.
    static func pssKiB() -> Int { field("Pss:", in: "/proc/self/smaps_rollup") }

    /// CPU time (user + system, all threads) used so far, in seconds.
    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    /// Open file descriptors (/proc/self/fd).
    static func openFiles() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
    }

    private static func field(_ name: String, in path: String) -> Int {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return 0 }
        for line in text.split(separator: "\n") where line.hasPrefix(name) {
            let number = line.dropFirst(name.count).split(whereSeparator: { $0 == " " || $0 == "\t" }).first.flatMap {
                Int($0)
            }
            return number ?? 0
        }
        return 0
    }
}

/// Seconds since `start` on the monotonic clock.
func seconds(since start: ContinuousClock.Instant) -> Double {
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}
