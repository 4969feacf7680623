import ArgumentParser
import Chirp
import ChirpCommands
import Foundation
import Logging

/// `chirp ping TYPE`: protocol-level round trips to one peer, in the style of ping(8).
struct PingCommand: AsyncParsableCommand, Sendable {
    static let configuration = CommandConfiguration(
        commandName: "ping",
        abstract: "Measure round trips to a peer, in the style of ping(8).",
        discussion: """
            chirp joins TYPE, waits (up to --timeout, 10 s by default) for the peer
            (--peer, or the first app to connect: chirp's own peers, such as a
            chirp listen, only when no app is there), then sends a Chirp ping
            frame every --interval seconds and times its pong. The peer's Chirp
            library answers by itself, without app code: this measures the
            network and the two peers' event loops. It stops after --count pings,
            or at Ctrl-C, and prints a summary.

            OUTPUT
              PING alice (127.0.0.1:50123) on _chat._tcp
              pong from alice: seq=1 time=0.412 ms
              no pong from alice: seq=2 (no reply within 5 s)
              --- alice ping statistics ---
              2 pings transmitted, 1 pong received, 50% loss, time 1.00 s
              rtt min/avg/max/stddev = 0.412/0.412/0.412/0.000 ms
              stddev is the population standard deviation (ping(8)'s mdev).

            EXIT STATUS
              0 every ping got its pong; 2 no (matching) peer within --timeout, or
              nothing at --connect; 3 a pong was missing, or the peer left; 4
              refused (shared secret missing or different); 64 bad input; 69 no
              DNS-SD daemon. See 'chirp --help'. Stopped by Ctrl-C (or SIGTERM),
              it prints the summary and exits 0 when every pong came.

            EXAMPLES
              Ping the first peer of _chat._tcp until Ctrl-C:
                chirp ping chat
              Three pings to alice, then the summary:
                chirp ping chat --peer alice -c 3
              Fast pings to a peer on another subnet:
                chirp ping chat --connect 10.0.0.7:51234 -c 100 -i 0.01
            """)

    @Argument(help: "The service type to join, e.g. chat for _chat._tcp.")
    var type: String

    @Option(
        help: ArgumentHelp(
            "Ping this peer: its name, its peer id, or the first characters (at least 4) of its id.", valueName: "name")
    )
    var peer: String?

    @Option(name: [.customShort("c"), .long], help: ArgumentHelp("Stop after this many pings.", valueName: "count"))
    var count: Int?

    @Option(name: [.customShort("i"), .long], help: ArgumentHelp("Seconds between pings.", valueName: "seconds"))
    var interval: Double = 1

    @Option(
        name: [.customShort("W"), .long], help: ArgumentHelp("Seconds to wait for each pong.", valueName: "seconds"))
    var wait: Double = 5

    @OptionGroup var options: PeerCommandOptions

    func validate() throws {
        _ = try validateServiceType(type)
        if let count, count < 1 { throw ValidationError("-c/--count must be at least 1, got \(count)") }
        guard interval >= 0.001 && interval <= 3600 else {
            throw ValidationError("-i/--interval must be 0.001-3600 seconds")
        }
        guard wait > 0 && wait <= 3600 else {
            throw ValidationError(
                "-W/--wait must be greater than 0 and at most 3600 seconds, got \(formatSeconds(wait))")
        }
        try options.checkPeerSelection(peer)
    }

    func run() async throws {
        let serviceType = try validateServiceType(type)
        let logger = options.common.makeLogger()
        try await CommandRunner.run(watchesOutput: true) { try await ping(on: serviceType, logger: logger) }
    }

    /// What `chirp ping` does once its arguments are parsed.
    private func ping(on serviceType: ServiceType, logger: Logger) async throws -> ExitStatus {
        let interval = Duration.milliseconds(Int64(self.interval * 1000))
        let wait = Duration.milliseconds(Int64(self.wait * 1000))
        return try await PeerSession.run(
            command: "ping", serviceType: serviceType, options: options, logger: logger
        ) { session in
            let target = try await session.findPeer(
                peer.map(PeerSelector.init), within: options.common.timeout(default: 10), preferringApps: true)
            let address = target.addresses.first.map { " (\($0))" } ?? ""
            Terminal.line("PING \(target.name)\(address) on \(session.typeText)")
            var statistics = PingStatistics()
            let clock = ContinuousClock()
            let start = clock.now
            var peerLeft: ChirpError?
            var sequence = 0
            while count.map({ sequence < $0 }) ?? true, !Task.isCancelled {
                sequence += 1
                let sent = clock.now
                do {
                    let rtt = try await session.transceiver.ping(target, timeout: wait)
                    statistics.record(rtt)
                    Terminal.line(
                        "pong from \(target.name): seq=\(sequence) time=\(PingStatistics.milliseconds(rtt)) ms")
                } catch let error as ChirpError where error.code == .requestTimedOut {
                    statistics.record(nil)
                    Terminal.line(
                        "no pong from \(target.name): seq=\(sequence) (no reply within \(PeerSession.format(wait)))")
                } catch let error as ChirpError {
                    statistics.record(nil)
                    peerLeft = error
                    break
                } catch is CancellationError {
                    break  // Ctrl-C while waiting for a pong: print the summary
                }
                if let count, sequence >= count { break }
                do {
                    try await Task.sleep(until: sent + interval, clock: clock)
                } catch {
                    break  // Ctrl-C: print the summary
                }
            }
            for line in statistics.summary(peerName: target.name, elapsed: clock.now - start) { Terminal.line(line) }
            if let peerLeft {
                throw CLIError.peerFailure("\(peerLeft)")
            }
            return statistics.lost == 0 ? .success : .peerFailure
        }
    }
}

/// Round-trip statistics, as ping(8) prints them.
struct PingStatistics: Sendable {
    private(set) var transmitted = 0
    private(set) var times: [Double] = []  // milliseconds

    var received: Int { times.count }
    var lost: Int { transmitted - received }

    /// One ping: its round-trip time, or `nil` when no pong came.
    mutating func record(_ rtt: Duration?) {
        transmitted += 1
        if let rtt { times.append(Self.millisecondsValue(rtt)) }
    }

    func summary(peerName: String, elapsed: Duration) -> [String] {
        let loss = transmitted == 0 ? 0 : Double(lost) * 100 / Double(transmitted)
        let lossText = loss == loss.rounded() ? "\(Int(loss))%" : String(format: "%.1f%%", loss)
        var lines = [
            "--- \(peerName) ping statistics ---",
            "\(transmitted) ping\(transmitted == 1 ? "" : "s") transmitted, \(received) pong\(received == 1 ? "" : "s") received, "
                + "\(lossText) loss, time \(String(format: "%.2f", Self.millisecondsValue(elapsed) / 1000)) s"
        ]
        if !times.isEmpty {
            let minimum = times.min() ?? 0
            let maximum = times.max() ?? 0
            let average = times.reduce(0, +) / Double(times.count)
            let variance = times.reduce(0) { $0 + ($1 - average) * ($1 - average) } / Double(times.count)
            let values = [minimum, average, maximum, variance.squareRoot()].map { String(format: "%.3f", $0) }
            lines.append("rtt min/avg/max/stddev = \(values.joined(separator: "/")) ms")
        }
        return lines
    }

    static func millisecondsValue(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
    }

    static func milliseconds(_ duration: Duration) -> String {
        String(format: "%.3f", millisecondsValue(duration))
    }
}
