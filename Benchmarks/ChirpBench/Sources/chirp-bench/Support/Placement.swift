import Foundation

#if os(Linux)
/// Which CPUs the processes of a round trip may run on.
///
/// On this project's 2-vCPU VMs a round trip's cost depends first on where the scheduler puts its two ends: when they
/// share a vCPU, the other end runs as soon as this one blocks (a plain TCP echo takes ~12 µs); when they sit on
/// different vCPUs, each wake-up of an idle vCPU costs some 20 µs (the guest halts an idle vCPU at once:
/// `cpuidle` haltpoll with `guest_halt_poll_ns=0`), and the same echo takes ~55 µs. Which of the two the scheduler
/// picks is sticky and depends on the load of the minutes before, so the bench also measures both placements on
/// purpose, for Chirp and for the raw echo alike.
enum Placement: String, CaseIterable {
    /// Every process of the round trip on CPU 0.
    case sharedCPU = "shared-cpu"
    /// The requesting process on CPU 0, the answering one on CPU 1.
    case splitCPUs = "split-cpus"

    /// What the figures' titles say.
    var description: String {
        switch self {
        case .sharedCPU: "both processes pinned to one CPU"
        case .splitCPUs: "the two processes pinned to two different CPUs"
        }
    }

    /// The CPUs of the requesting side and of the answering side.
    var cpus: (requester: Int, responder: Int) {
        switch self {
        case .sharedCPU: (0, 0)
        case .splitCPUs: (0, 1)
        }
    }
}

/// Sets and restores CPU affinity of whole processes (every thread, and the processes they started).
///
/// glibc's `sched_setaffinity` is declared only under `_GNU_SOURCE`, which Swift's Glibc module does not import, so it
/// is looked up with `dlsym`; the `cpu_set_t` bit layout is glibc's (`__bits`, one bit per CPU, low bit first).
enum Affinity {
    private typealias SetAffinity = @convention(c) (pid_t, Int, UnsafeRawPointer) -> Int32
    private typealias GetAffinity = @convention(c) (pid_t, Int, UnsafeMutableRawPointer) -> Int32

    private static let set: SetAffinity? = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "sched_setaffinity").map {
        unsafeBitCast($0, to: SetAffinity.self)
    }
    private static let get: GetAffinity? = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "sched_getaffinity").map {
        unsafeBitCast($0, to: GetAffinity.self)
    }

    /// The CPUs this process may run on now, or `nil` where affinity cannot be read.
    static func current() -> [Int]? {
        guard let get else { return nil }
        var mask = cpu_set_t()
        let size = MemoryLayout<cpu_set_t>.size
        guard withUnsafeMutableBytes(of: &mask, { get(0, size, $0.baseAddress!) }) == 0 else { return nil }
        return withUnsafeBytes(of: &mask) { bytes in
            (0..<(size * 8)).filter { bytes[$0 / 8] & (1 << ($0 % 8)) != 0 }
        }
    }

    /// Restricts every thread of `pid` and of its descendants to `cpus`.
    static func pin(_ pid: pid_t, to cpus: [Int]) throws {
        guard let set else { throw BenchError("sched_setaffinity is not available") }
        var mask = cpu_set_t()
        let size = MemoryLayout<cpu_set_t>.size
        withUnsafeMutableBytes(of: &mask) { bytes in
            for cpu in cpus where cpu < size * 8 { bytes[cpu / 8] |= 1 << (cpu % 8) }
        }
        for task in threadsAndDescendants(of: pid) {
            let result = withUnsafeBytes(of: &mask) { set(task, size, $0.baseAddress!) }
            // A thread that ended since the listing (ESRCH) needs no affinity.
            guard result == 0 || errno == ESRCH else {
                throw BenchError("sched_setaffinity(\(task), \(cpus)): \(String(cString: strerror(errno)))")
            }
        }
    }

    /// The thread ids of `pid` and, recursively, of the processes its threads started (a wrapper's child, say).
    private static func threadsAndDescendants(of pid: pid_t) -> [pid_t] {
        let directory = "/proc/\(pid)/task"
        let tasks = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).compactMap { pid_t($0) }
        var all = tasks
        for task in tasks {
            let children = (try? String(contentsOfFile: "\(directory)/\(task)/children", encoding: .utf8)) ?? ""
            for child in children.split(separator: " ").compactMap({ pid_t($0) }) {
                all += threadsAndDescendants(of: child)
            }
        }
        return all
    }
}
#endif
