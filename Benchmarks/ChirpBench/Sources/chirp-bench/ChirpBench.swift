// chirp-bench: the benchmarks behind `make bench` (see Docs/Performance.md).
//
//     chirp-bench                          # every benchmark, full length (1-2 minutes)
//     chirp-bench --quick                  # every benchmark, short runs (a smoke run, under a minute)
//     chirp-bench --only oneway,roundtrip  # some of them
//     chirp-bench --json bench-results/latest.json
//
// The same executable is spawned in a peer role (`--role sink|raw-sink|nio-echo|join|noop|log-ref`) for the measurements
// that need a second process; those roles are internal.
import Foundation

#if os(Linux)
@main
enum ChirpBench {
    static func main() {
        setenv("AVAHI_COMPAT_NOWARN", "1", 1)
        let arguments = Array(CommandLine.arguments.dropFirst())
        do {
            if let role = Options.value(of: "--role", in: arguments) {
                try PeerRoles.run(role: role, arguments: arguments)
            } else {
                let options = try Options(arguments)
                try Harness(options: options).run()
            }
        } catch {
            FileHandle.standardError.write(Data("chirp-bench: \(error)\n".utf8))
            exit(1)
        }
        exit(0)
    }
}

#else
@main
enum ChirpBench {
    static func main() {
        print("chirp-bench runs on Linux only (it reads /proc and uses Linux system calls)")
        exit(1)
    }
}
#endif

#if os(Linux)
/// Command-line options of the harness.
struct Options {
    /// Short runs, for a smoke test.
    var quick = false
    /// Where to write the JSON results; nothing is written when `nil`.
    var jsonPath: String?
    /// The benchmarks to run (all when empty).
    var only: Set<String> = []
    /// Free text recorded with the results (e.g. the git commit).
    var label: String?

    static let benchmarks = [
        "codec", "oneway", "roundtrip", "bulk", "files", "broadcast", "startup", "connect", "listrctl", "log", "flood",
        "console"
    ]

    init(_ arguments: [String]) throws {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            func next() throws -> String {
                guard index < arguments.count else { throw BenchError("\(argument) needs a value") }
                defer { index += 1 }
                return arguments[index]
            }
            switch argument {
            case "--quick": quick = true
            case "--json": jsonPath = try next()
            case "--label": label = try next()
            case "--only":
                only = Set(try next().split(separator: ",").map(String.init))
                if let unknown = only.first(where: { !Self.benchmarks.contains($0) }) {
                    throw BenchError(
                        "unknown benchmark '\(unknown)'; known: \(Self.benchmarks.joined(separator: ", "))")
                }
            case "--help", "-h":
                print(
                    "usage: chirp-bench [--quick] [--json PATH] [--only \(Self.benchmarks.joined(separator: ","))] [--label TEXT]"
                )
                exit(0)
            default: throw BenchError("unknown argument '\(argument)' (try --help)")
            }
        }
        if ProcessInfo.processInfo.environment["QUICK"].map({ !$0.isEmpty && $0 != "0" }) == true { quick = true }
    }

    func wants(_ name: String) -> Bool { only.isEmpty || only.contains(name) }

    /// The value following `flag` in `arguments`.
    static func value(of flag: String, in arguments: [String]) -> String? {
        guard let index = arguments.firstIndex(of: flag), index + 1 < arguments.count else { return nil }
        return arguments[index + 1]
    }
}

/// A harness failure, with a message for the terminal.
struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
#endif
