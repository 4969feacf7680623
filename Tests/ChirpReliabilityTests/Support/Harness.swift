// What every test target shares (unique service types, log capture, child processes), visible in every file here.
@_exported import ChirpTestSupport
import Foundation
import Testing

/// Hosts of the multi-host harness (scripts/netns/netns.sh) for one test: a fresh `NETNS_PREFIX`, `up` on creation,
/// `down` on ``tearDown()`` (call it in a `defer`; a harness that is never torn down is removed by `mk/netns.mk`,
/// which reads the prefixes from `CHIRP_NETNS_PREFIX_LOG`).
final class Harness: Sendable {
    /// The prefix of every namespace and folder of this harness: `cr` + 4 random characters.
    let prefix: String
    /// Host names, `h1`...
    let hosts: [String]

    /// Creates `count` hosts. Throws (after removing what was made) when `up` fails.
    /// Builds `count` hosts; with `subnets: 2`, on two subnets joined by a router whose avahi-daemon reflects mDNS
    /// (odd hosts on the first, even hosts on the second; `netns.sh up N --subnets 2`); `ip` picks their addresses
    /// (`netns.sh up N --ip MODE`: `ipv4`, `dual`, `link-local` or `global`); `links: 2` joins the hosts by a second
    /// link too (`eth1`, a subnet of its own: `netns.sh up N --links 2`).
    init(hosts count: Int, subnets: Int = 1, ip: String = "ipv4", links: Int = 1) throws {
        let letters = "abcdefghijklmnopqrstuvwxyz0123456789"
        prefix = "cr" + String((0..<4).map { _ in letters.randomElement() ?? "x" })
        hosts = (1...count).map { "h\($0)" }
        if let log = ProcessInfo.processInfo.environment["CHIRP_NETNS_PREFIX_LOG"], !log.isEmpty,
            let handle = FileHandle(forWritingAtPath: log)
                ?? (FileManager.default.createFile(atPath: log, contents: nil)
                    ? FileHandle(forWritingAtPath: log) : nil)
        {
            handle.seekToEndOfFile()
            handle.write(Data((prefix + "\n").utf8))
            try? handle.close()
        }
        let result = Harness.script(
            ["up", String(count)] + (subnets > 1 ? ["--subnets", String(subnets)] : [])
                + (ip != "ipv4" ? ["--ip", ip] : []) + (links > 1 ? ["--links", String(links)] : []), prefix: prefix)
        guard result.status == 0 else {
            _ = Harness.script(["down"], prefix: prefix)
            throw HarnessError(message: "netns.sh up \(count) failed (\(result.status)): \(result.output)")
        }
    }

    /// Removes every namespace, daemon and process of this harness.
    func tearDown() {
        _ = Harness.script(["down"], prefix: prefix)
    }

    /// Runs `netns.sh ARGS` for this harness and waits for it; throws when it fails.
    @discardableResult
    func run(_ arguments: [String]) throws -> String {
        let result = Harness.script(arguments, prefix: prefix)
        guard result.status == 0 else {
            throw HarnessError(
                message: "netns.sh \(arguments.joined(separator: " ")) failed (\(result.status)): \(result.output)")
        }
        return result.output
    }

    /// The address of `host` to dial first (`netns.sh address`'s first line: IPv4, else global IPv6, else scoped
    /// link-local IPv6).
    func address(_ host: String) throws -> String {
        try addresses(host).first ?? ""
    }

    /// Every address of `host` on its link, in dialing order (`netns.sh address`).
    func addresses(_ host: String) throws -> [String] {
        try run(["address", host]).split(whereSeparator: \.isNewline).map(String.init)
    }

    /// The IPv4 address `host` has now on `interface` (`netns.sh address HOST IF`).
    func address(_ host: String, on interface: String) throws -> String {
        try run(["address", host, interface]).split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
    }

    /// The TCP connections established on `host` (`ss -Htn state established` there), as (local, remote) `ip:port`
    /// pairs: every one is a probe's, since nothing else on a harness host speaks TCP.
    func establishedConnections(on host: String) throws -> [(local: String, remote: String)] {
        try run(["exec", host, "ss", "-Htn", "state", "established"]).split(whereSeparator: \.isNewline).compactMap {
            let fields = $0.split(whereSeparator: \.isWhitespace)
            return fields.count >= 4 ? (String(fields[2]), String(fields[3])) : nil
        }
    }

    /// Starts `chirp-probe` on `host`.
    func probe(on host: String, name: String, service: String, _ options: [String] = []) async throws -> ProbeProcess {
        try await ProbeProcess(
            harness: self, host: host, name: name, arguments: ["--service", service, "--name", name] + options)
    }

    /// Starts any command on `host` (through `netns.sh exec`); the process's PID is the command's own.
    func start(on host: String, _ command: [String], name: String) async throws -> TestProcess {
        try await TestProcess(
            Harness.scriptPath, ["exec", host] + command, name: name, environment: ["NETNS_PREFIX": prefix])
    }

    // MARK: - The script

    /// scripts/netns/netns.sh of this checkout.
    static let scriptPath: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { url.deleteLastPathComponent() }  // Support, ChirpReliabilityTests, Tests, (root)
        return url.appendingPathComponent("scripts/netns/netns.sh").path
    }()

    /// Runs the script synchronously; its stdout and stderr together. Foundation's `Process` rather than
    /// ``TestProcess``: it runs where nothing can await (the static ``skipReason``, and ``tearDown()`` in `defer`
    /// blocks).
    static func script(_ arguments: [String], prefix: String? = nil) -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [scriptPath] + arguments
        var environment = ProcessInfo.processInfo.environment
        environment["NETNS_QUIET"] = "1"
        if let prefix { environment["NETNS_PREFIX"] = prefix }
        process.environment = environment
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle.nullDevice
        do { try process.run() } catch { return (127, "cannot run \(scriptPath): \(error)") }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// Why these tests do not run here, or `nil` when they do: they need `CHIRP_NETNS=1` and a harness that works.
    static let skipReason: String? = {
        guard ProcessInfo.processInfo.environment["CHIRP_NETNS"] == "1" else {
            return "multi-host fault tests need CHIRP_NETNS=1 (run `make netns-test`)"
        }
        let result = script(["available"])
        guard result.status == 0 else {
            let reason = result.output.split(separator: "\n").first.map(String.init) ?? "netns.sh available failed"
            return reason
        }
        return nil
    }()

    /// Whether the tests run (for `.enabled(if:)`).
    static var isEnabled: Bool { skipReason == nil }
}

/// The harness script failed.
struct HarnessError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// Milliseconds since 1970, the clock of the probes' "ms" field.
func nowMs() -> Int { Int((Date().timeIntervalSince1970 * 1000).rounded()) }

/// The multi-host fault tests run one at a time: each builds its own hosts, and the machine has few cores. The suites
/// nested in this one (in extensions) inherit `.serialized` and the time limit of each test.
@Suite(.serialized, .timeLimit(.minutes(10))) enum FaultTests {}

extension Trait where Self == ConditionTrait {
    /// Runs the test only with `CHIRP_NETNS=1` on a machine where the harness works; otherwise the test is skipped
    /// with the reason, on one line.
    static var netns: Self { .enabled(if: Harness.isEnabled, Comment(rawValue: Harness.skipReason ?? "")) }
}

/// Prints a measured figure as `measure KEY VALUE UNIT` (the figures in Docs/Reliability.md, "Faults", come from these
/// lines), and appends it to the file named by `CHIRP_NETNS_MEASURE_LOG` if set.
func measure(_ key: String, _ value: Int, _ unit: String = "ms") {
    let line = "measure \(key) \(value) \(unit)\n"
    FileHandle.standardError.write(Data(line.utf8))
    if let log = ProcessInfo.processInfo.environment["CHIRP_NETNS_MEASURE_LOG"], !log.isEmpty {
        if !FileManager.default.fileExists(atPath: log) {
            _ = FileManager.default.createFile(atPath: log, contents: nil)
        }
        if let handle = FileHandle(forWritingAtPath: log) {
            handle.seekToEndOfFile()
            handle.write(Data(line.utf8))
            try? handle.close()
        }
    }
}
