import Foundation
import Testing

/// One line of `chirp-probe` output (see Examples/Probe/Probe.swift); fields absent from a line are `nil`.
struct ProbeEvent: Decodable, Sendable {
    var event: String
    var ms: Int
    var name: String?
    var id: String?
    var instance: String?
    var port: Int?
    var from: String?
    var seq: Int?
    var names: [String]?
    var connected: [String]?
    var peer: String?
    var reason: String?
    var kind: String?
    var message: String?
    var count: Int?
    var bytes: Int?
    var accepted: Int?
    var full: Int?
    var notConnected: Int?
    var rssStart: Int?
    var rssMax: Int?
    var firstSeq: Int?
    var lastSeq: Int?
    var firstFullAfterMs: Int?
    var ok: Int?
    var failed: Int?
    var latencies: [Int]?
    var errors: [String]?

    static func parse(_ line: String) -> ProbeEvent? {
        try? JSONDecoder().decode(ProbeEvent.self, from: Data(line.utf8))
    }

    func `is`(_ event: String, name: String? = nil) -> Bool {
        self.event == event && (name == nil || self.name == name)
    }
}

/// `chirp-probe` running on a harness host.
final class ProbeProcess: Sendable {
    let host: String
    let name: String
    let process: TestProcess

    init(harness: Harness, host: String, name: String, arguments: [String]) async throws {
        self.host = host
        self.name = name
        // CHIRP_PROBE_LOG_LEVEL=debug shows discovery and the peer table in `standardError` (to investigate a failure).
        process = try await harness.start(
            on: host,
            [
                binaryPath("chirp-probe"), "--log-level",
                ProcessInfo.processInfo.environment["CHIRP_PROBE_LOG_LEVEL"] ?? "info"
            ] + arguments, name: "\(name)@\(host)")
    }

    var events: [ProbeEvent] { process.lines.compactMap(ProbeEvent.parse) }
    /// Where the output is now: pass it to ``waitFor(from:timeout:_:where:)`` to look only at what comes after.
    var mark: Int { process.lineCount }
    var pid: Int32 { process.pid }
    var standardError: String { process.standardError }

    func command(_ line: String) { process.send(line) }
    func signal(_ signal: Int32) { process.signal(signal) }
    func kill() { process.kill() }

    /// Waits for an event from line `from` on that satisfies `predicate`.
    @discardableResult
    func waitFor(
        from start: Int = 0, timeout: Double = 30, _ what: String,
        where predicate: @escaping @Sendable (ProbeEvent) -> Bool
    ) async throws -> ProbeEvent {
        let line = try await process.waitForLine(from: start, timeout: .seconds(timeout), what) { line in
            ProbeEvent.parse(line).map(predicate) ?? false
        }
        guard let event = ProbeEvent.parse(line) else { throw HarnessError(message: "unparsable line \(line)") }
        return event
    }

    /// Waits until it listens; returns its port.
    @discardableResult
    func waitReady(timeout: Double = 30) async throws -> Int {
        try await waitFor(timeout: timeout, "ready") { $0.event == "ready" }.port ?? 0
    }

    /// Waits until it is connected to every one of `names` (from line `from` on, or at present).
    func waitConnected(to names: [String], from start: Int = 0, timeout: Double = 30) async throws {
        let wanted = Set(names)
        _ = try await waitFor(from: start, timeout: timeout, "connected to \(names.sorted())") { event in
            event.event == "availablePeers" && wanted.isSubset(of: Set(event.connected ?? []))
        }
    }

    /// The names in the last `availablePeers` line, and whether any line ever listed one name twice.
    var sawDuplicatePeer: Bool {
        events.contains { event in
            guard event.event == "availablePeers", let names = event.names else { return false }
            return Set(names).count != names.count
        }
    }

    /// Sequence numbers of the messages received from `sender`, in arrival order.
    func receivedSeqs(from sender: String) -> [Int] {
        events.filter { $0.event == "message" && $0.from == sender }.compactMap(\.seq)
    }
}

extension ProbeProcess {
    /// Sends `count` messages of `bytes` bytes to `receiver` (the `send` command), expects all of them taken, and waits
    /// until the last one has arrived; returns the `sent` report (its sequence numbers).
    @discardableResult
    func send(
        _ count: Int, of bytes: Int = 100, to receiver: ProbeProcess, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> ProbeEvent {
        let (mark, sender) = (self.mark, name)
        command("send \(receiver.name) \(count) \(bytes)")
        let sent = try await waitFor(from: mark, "\(count) sent to \(receiver.name)") { $0.event == "sent" }
        #expect(
            sent.accepted == count, "\(sender) sent \(sent.accepted ?? 0) of \(count)", sourceLocation: sourceLocation)
        try await receiver.waitFor("\(sender)'s message \(sent.lastSeq ?? 0)") {
            $0.event == "message" && $0.from == sender && $0.seq == sent.lastSeq
        }
        return sent
    }
}

extension Harness {
    /// A harness of `count` hosts, a probe on each (``connectedProbes(service:_:timeout:)``) on a fresh service type
    /// (`letter` in its name) with `options`, all connected to each other. The caller tears the harness down; it is
    /// torn down here when the probes do not connect.
    static func connected(hosts count: Int, service letter: String, _ options: [String]) async throws -> (
        harness: Harness, type: String, probes: [ProbeProcess]
    ) {
        let harness = try Harness(hosts: count)
        let type = uniqueServiceType(letter)
        do {
            return (harness, type, try await harness.connectedProbes(service: type, options))
        } catch {
            harness.tearDown()
            throw error
        }
    }

    /// Starts a probe on each host (`a` on h1, `b` on h2, ...) on `service` with `options`, and waits until each is
    /// connected to all the others (within `timeout` seconds each).
    func connectedProbes(service: String, _ options: [String] = [], timeout: Double = 30) async throws
        -> [ProbeProcess]
    {
        var probes: [ProbeProcess] = []
        for (index, host) in hosts.enumerated() {
            let name = String(UnicodeScalar(UInt8(ascii: "a") + UInt8(index)))
            probes.append(try await probe(on: host, name: name, service: service, options))
        }
        for probe in probes {
            try await probe.waitConnected(to: probes.map(\.name).filter { $0 != probe.name }, timeout: timeout)
        }
        return probes
    }
}
