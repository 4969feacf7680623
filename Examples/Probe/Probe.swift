// chirp-probe: one Chirp peer that a test drives through standard input and watches through standard output.
// The multi-host fault tests (Tests/ChirpReliabilityTests) start one on each harness host (scripts/netns/netns.sh).
//
//     chirp-probe --service flt1234 --name alice
//     chirp-probe --service flt1234 --name bob --heartbeat-timeout 2 --outbound-limit 1048576
//
// Standard output: one JSON object a line, always with "event" and "ms" (wall clock, milliseconds since 1970):
//   {"event":"ready","port":P}                      listening (and asked the daemon to advertise)
//   {"event":"advertised","instance":I}           the daemon confirmed the advertisement (again after a daemon restart)
//   {"event":"instanceFound","instance":I}        browsing saw an instance (again after a daemon restart)
//   {"event":"peerAdded"|"peerRemoved"|"peerConnected"|"peerDisconnected","name":N,"id":ID}
//   {"event":"availablePeers","names":[N...],"connected":[N...]}   after every change of the set
//   {"event":"message","from":N,"seq":S,"bytes":B}  a probe message arrived (S: the sender's sequence number)
//   {"event":"refused","peer":N,"reason":R}         a connection refused during the handshake
//   {"event":"discoveryUnavailable","message":M}
//   {"event":"error","kind":K,"message":M[,"peer":N,"count":C]}   outboundLimitExceeded is printed at counts 1, 2, 4, 8, ...
//   answers to commands: "sent", "broadcasted", "flooded", "requested", "peers", "rss", "stopped"
// Standard input: one command a line.
//   send NAME N [BYTES]      send N messages to the connected peer NAME (padding of BYTES, default 0)
//   broadcast N [BYTES]      broadcast N messages
//   flood NAME SECONDS BYTES send to NAME as fast as possible for SECONDS; reports what `send` did and the peak RSS
//   request NAME N           N requests to NAME, one after the other (each waits for its reply, with the library's
//                            default timeout): {"event":"requested","ok":K,"failed":F,"latencies":[ms...],"errors":[..]}
//   peers                    the available and connected peers
//   rss                      this process's resident memory
//   quit                     stop the transceiver and exit (so does end of input)
// Every message carries a sequence number that grows by one per message this probe sends (to anyone), so a receiver
// can tell a duplicate or a gap.
import ArgumentParser
import Chirp
import Foundation
import Logging
import NIOConcurrencyHelpers

/// The request a probe answers (`request NAME N`): its reply carries the same number back.
struct ProbeRequest: Codable, Sendable, ChirpMessage {
    static let chirpTypeName = "probe.request"
    var number: Int
}

/// The reply to a ``ProbeRequest``.
struct ProbeReply: Codable, Sendable, ChirpMessage {
    static let chirpTypeName = "probe.reply"
    var number: Int
}

/// The one message type probes exchange.
struct ProbeMessage: Codable, Sendable, ChirpMessage {
    static let chirpTypeName = "probe.message"
    /// The sender's sequence number: 1, 2, 3, ... over everything it sends.
    var seq: Int
    /// Filler to make the message as large as the test wants.
    var padding: String
}

@main
struct Probe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chirp-probe",
        abstract: "A Chirp peer driven through stdin (commands) and stdout (one JSON event a line), for fault tests.",
        discussion: "See the comment at the top of Examples/Probe/Probe.swift for the events and commands.")

    @Option(help: "The DNS-SD service type to join (1-15 letters, digits, hyphens).")
    var service: String

    @Option(help: "The name others see.")
    var name: String

    @Option(help: "Seconds between heartbeats on a quiet connection (default: the library's).")
    var heartbeatInterval: Double?

    @Option(help: "Seconds without anything received before a connection is dropped (default: the library's).")
    var heartbeatTimeout: Double?

    @Option(help: "Bytes that may wait in the queue of one slow peer (default: the library's).")
    var outboundLimit: Int?

    @Option(help: "Log level on standard error: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "notice"

    func run() async throws {
        let level = Logger.Level(rawValue: logLevel) ?? .notice
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        var configuration = Configuration(serviceType: service)
        configuration.peerName = name
        configuration.logger = Logger(label: "chirp-probe")
        if let heartbeatInterval { configuration.heartbeatInterval = .milliseconds(Int(heartbeatInterval * 1000)) }
        if let heartbeatTimeout { configuration.heartbeatTimeout = .milliseconds(Int(heartbeatTimeout * 1000)) }
        if let outboundLimit { configuration.outboundLimit = outboundLimit }

        let transceiver = Transceiver(configuration: configuration)
        try transceiver.receive(ProbeMessage.self) { message, sender in
            emit(["event": "message", "from": sender.name, "seq": message.seq, "bytes": message.padding.utf8.count])
        }
        try transceiver.respond(to: ProbeRequest.self) { request, _ in ProbeReply(number: request.number) }
        let events = transceiver.makeEvents()
        let driver = Driver(transceiver: transceiver)
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await Self.report(events) }
            do {
                try await transceiver.start()
            } catch {
                emit(["event": "error", "kind": "resume", "message": "\(error)"])
                group.cancelAll()
                return
            }
            for await line in StandardInput.lines() {
                if await !driver.run(line) { break }
            }
            await transceiver.shutdown()
            emit(["event": "stopped"])
            group.cancelAll()
        }
    }

    /// Prints every transceiver event as a JSON line.
    static func report(_ events: AsyncStream<TransceiverEvent>) async {
        var fullCounts: [String: Int] = [:]
        for await event in events {
            switch event {
            case .started(let port): emit(["event": "ready", "port": port])
            case .advertised(let instance): emit(["event": "advertised", "instance": instance])
            case .instanceFound(let instance): emit(["event": "instanceFound", "instance": instance])
            case .peerAdded(let peer): emit(["event": "peerAdded", "name": peer.name, "id": peer.id])
            case .peerRemoved(let peer): emit(["event": "peerRemoved", "name": peer.name, "id": peer.id])
            case .peerConnected(let peer): emit(["event": "peerConnected", "name": peer.name, "id": peer.id])
            case .peerDisconnected(let peer): emit(["event": "peerDisconnected", "name": peer.name, "id": peer.id])
            case .availablePeersChanged(let peers):
                emit([
                    "event": "availablePeers", "names": peers.map(\.name),
                    "connected": peers.filter(\.isConnected).map(\.name)
                ])
            case .connectionRefused(let peer, let reason): emit(["event": "refused", "peer": peer, "reason": reason])
            case .discoveryUnavailable(let message): emit(["event": "discoveryUnavailable", "message": message])
            case .unhandledMessage(let typeName, let sender):
                emit(["event": "unhandledMessage", "type": typeName, "from": sender.name])
            case .error(let error):
                if error.code == .outboundLimitExceeded, let peer = error.peer {
                    // A flood reports this once per skipped message: print counts 1, 2, 4, 8, ... only.
                    let count = (fullCounts[peer.name] ?? 0) + 1
                    fullCounts[peer.name] = count
                    if count & (count - 1) == 0 {
                        emit([
                            "event": "error", "kind": "outboundLimitExceeded", "peer": peer.name, "count": count,
                            "message": "\(error)"
                        ])
                    }
                } else {
                    emit(["event": "error", "kind": "other", "message": "\(error)"])
                }
            case .stopped: break
            }
        }
    }
}

/// Runs the commands read from standard input.
actor Driver {
    let transceiver: Transceiver
    private var nextSeq = 1

    init(transceiver: Transceiver) { self.transceiver = transceiver }

    /// Runs one command line; `false` to stop.
    func run(_ line: String) async -> Bool {
        let words = line.split(separator: " ").map(String.init)
        guard let command = words.first else { return true }
        let number = { (index: Int, fallback: Int) -> Int in
            words.count > index ? Int(words[index]) ?? fallback : fallback
        }
        switch command {
        case "send" where words.count >= 3:
            send(to: words[1], count: number(2, 0), bytes: number(3, 0))
        case "broadcast" where words.count >= 2:
            broadcast(count: number(1, 0), bytes: number(2, 0))
        case "flood" where words.count >= 4:
            await flood(to: words[1], seconds: Double(words[2]) ?? 1, bytes: number(3, 0))
        case "request" where words.count >= 3:
            await request(to: words[1], count: number(2, 0))
        case "peers":
            let peers = transceiver.availablePeers
            emit(["event": "peers", "names": peers.map(\.name), "connected": peers.filter(\.isConnected).map(\.name)])
        case "rss":
            emit(["event": "rss", "bytes": residentBytes()])
        case "quit":
            return false
        default:
            emit(["event": "error", "kind": "command", "message": "unknown or incomplete command: \(line)"])
        }
        return true
    }

    /// Counts of what `send` did.
    private struct Outcome {
        var accepted = 0, full = 0, notConnected = 0, other = 0
        var fields: [String: Any] { ["accepted": accepted, "full": full, "notConnected": notConnected, "other": other] }

        mutating func add(_ body: () throws -> Void) {
            do {
                try body()
                accepted += 1
            } catch let error as ChirpError where error.code == .outboundLimitExceeded {
                full += 1
            } catch let error as ChirpError where error.code == .peerNotConnected || error.code == .notRunning {
                notConnected += 1
            } catch {
                other += 1
            }
        }
    }

    private func peer(named name: String) -> Peer? {
        transceiver.connectedPeers.first { $0.name == name }
    }

    /// Sends one message with the next sequence number; the number is used up only when the message was taken.
    private func sendOne(_ padding: String, _ outcome: inout Outcome, _ body: (ProbeMessage) throws -> Void) {
        let accepted = outcome.accepted
        outcome.add { try body(ProbeMessage(seq: nextSeq, padding: padding)) }
        if outcome.accepted > accepted { nextSeq += 1 }
    }

    private func send(to name: String, count: Int, bytes: Int) {
        var outcome = Outcome()
        let padding = String(repeating: "x", count: max(0, bytes))
        let first = nextSeq
        for _ in 0..<max(0, count) {
            guard let peer = peer(named: name) else {
                outcome.notConnected += 1
                continue
            }
            sendOne(padding, &outcome) { try transceiver.send($0, to: peer) }
        }
        let fields: [String: Any] = ["event": "sent", "to": name, "firstSeq": first, "lastSeq": nextSeq - 1]
        emit(fields.merging(outcome.fields) { $1 })
    }

    private func broadcast(count: Int, bytes: Int) {
        var outcome = Outcome()
        let padding = String(repeating: "x", count: max(0, bytes))
        let first = nextSeq
        for _ in 0..<max(0, count) {
            sendOne(padding, &outcome) { try transceiver.send($0, to: .all) }
        }
        let fields: [String: Any] = ["event": "broadcasted", "firstSeq": first, "lastSeq": nextSeq - 1]
        emit(fields.merging(outcome.fields) { $1 })
    }

    /// Sends to `name` as fast as `send` takes messages, for `seconds`; when the queue is full, tries again 1 ms later.
    private func flood(to name: String, seconds: Double, bytes: Int) async {
        var outcome = Outcome()
        let padding = String(repeating: "x", count: max(0, bytes))
        let rssStart = residentBytes()
        var rssMax = rssStart
        let clock = ContinuousClock()
        let end = clock.now + .milliseconds(Int(seconds * 1000))
        var nextSample = clock.now
        var firstFullAfterMs: Int?
        let start = clock.now
        while clock.now < end {
            if clock.now >= nextSample {
                rssMax = max(rssMax, residentBytes())
                nextSample = clock.now + .milliseconds(50)
            }
            guard let peer = peer(named: name) else {
                outcome.notConnected += 1
                try? await Task.sleep(for: .milliseconds(10))
                continue
            }
            let (accepted, full) = (outcome.accepted, outcome.full)
            sendOne(padding, &outcome) { try transceiver.send($0, to: peer) }
            if outcome.accepted > accepted {
                if outcome.accepted % 256 == 0 { await Task.yield() }
            } else if outcome.full > full {
                if firstFullAfterMs == nil { firstFullAfterMs = milliseconds(clock.now - start) }
                try? await Task.sleep(for: .milliseconds(1))
            } else {
                try? await Task.sleep(for: .milliseconds(10))
            }
        }
        rssMax = max(rssMax, residentBytes())
        var fields: [String: Any] = [
            "event": "flooded", "to": name, "rssStart": rssStart, "rssMax": rssMax, "lastSeq": nextSeq - 1
        ]
        if let firstFullAfterMs { fields["firstFullAfterMs"] = firstFullAfterMs }
        emit(fields.merging(outcome.fields) { $1 })
    }
}

extension Driver {
    /// `count` requests to `name`, one after the other; how many were answered, how long each took, and what failed.
    func request(to name: String, count: Int) async {
        var latencies: [Int] = []
        var errors: [String] = []
        let clock = ContinuousClock()
        for number in 0..<max(0, count) {
            let start = clock.now
            do {
                guard let peer = transceiver.connectedPeers.first(where: { $0.name == name }) else {
                    throw ProbeFailure(text: "\(name) is not connected")
                }
                let reply = try await transceiver.request(ProbeRequest(number: number), to: peer, as: ProbeReply.self)
                guard reply.number == number else { throw ProbeFailure(text: "reply \(reply.number) to \(number)") }
                latencies.append(milliseconds(clock.now - start))
            } catch {
                errors.append("\(number): \(error)")
            }
        }
        emit([
            "event": "requested", "to": name, "ok": latencies.count, "failed": errors.count, "latencies": latencies,
            "errors": errors
        ])
    }
}

/// A request's failure that is the probe's own finding.
struct ProbeFailure: Error, CustomStringConvertible {
    var text: String
    var description: String { text }
}

/// `duration` in whole milliseconds.
func milliseconds(_ duration: Duration) -> Int {
    let (seconds, attoseconds) = duration.components
    return Int(seconds * 1000 + attoseconds / 1_000_000_000_000_000)
}

/// This process's resident set size in bytes (VmRSS of /proc/self/status), or 0 where there is none.
func residentBytes() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        let kilobytes =
            line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first.flatMap { Int($0) } ?? 0
        return kilobytes * 1024
    }
    return 0
}

/// Writes `fields` plus a wall-clock "ms" as one JSON line to standard output, at once and whole.
func emit(_ fields: [String: Any]) {
    var fields = fields
    fields["ms"] = Int((Date().timeIntervalSince1970 * 1000).rounded())
    guard let data = try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys]) else { return }
    outputLock.withLock { FileHandle.standardOutput.write(data + Data("\n".utf8)) }
}

private let outputLock = NIOLock()

/// Lines of standard input as an async sequence, read on a thread of their own so no task blocks on `readLine()`.
enum StandardInput {
    static func lines() -> AsyncStream<String> {
        AsyncStream { continuation in
            let thread = Thread {
                while let line = readLine() { continuation.yield(line) }
                continuation.finish()
            }
            thread.start()
        }
    }
}
