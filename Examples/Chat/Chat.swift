// chat: a terminal chat room over Chirp. Every line typed is broadcast to the peers of the service; every line
// received is printed with its sender.
//
//     chat --name alice            # in one terminal
//     chat --name bob              # in another, or on another host of the network
//     CHIRP_SECRET=... chat --name carol   # a private room: only peers with the same secret connect
import ArgumentParser
import Chirp
import ChirpCommands
import ChirpSupport
import Foundation
import Logging

/// One line of chat, as it travels between peers.
struct ChatLine: Codable, Sendable, ChirpMessage {
    static let chirpTypeName = "chat.line"
    var text: String
}

@main
struct Chat: AsyncParsableCommand {
    static func main() async { await CommandLineTool.main(Self.self) }

    static let configuration = CommandConfiguration(
        abstract: "A chat room on the local network: broadcasts each line you type, prints what others type.",
        discussion: """
            Peers of the same service type find each other through DNS-SD
            (Avahi or Bonjour) and connect directly. Each line read from
            standard input goes to every peer connected; when none is,
            standard error says that the line reached nobody.

            When standard input is not a terminal (a pipe, a file), the first
            line waits until a peer has connected (up to --wait seconds) and
            the others it found had a moment to connect too, so that
            `echo hello | chat ...` reaches the room.

            OUTPUT
              "[NAME] TEXT" for a message, "* connected to NAME" and
              "* NAME left" for peers. What peers send is shown with its
              control characters escaped.

            SHARED SECRET
              With a shared secret (the CHIRP_SECRET environment variable,
              or --secret-file PATH), only peers with the same secret
              connect, and everything is encrypted. Peers that cannot
              connect are reported on standard error
              ("chat: warning: cannot connect to NAME: REASON").

            EXIT STATUS
              0   standard input ended (after --linger), or its reader
                  went away
              1   any other failure (e.g. the port could not be opened)
              2   standard input ended, and a line reached no peer
              64  bad input: an invalid option, name, service type or secret
              69  no DNS-SD daemon answers (start avahi-daemon)
              Ctrl-C ends it at once.

            EXAMPLES
              chat --name alice
              echo "hello" | chat --name bot --service team-chat --linger 2
              chat --name alice --secret-file ~/.chat-secret
            """,
        version: ToolVersion.current)

    @Option(help: "The name others see (1-200 bytes).")
    var name: String = Configuration.defaultPeerName

    @Option(help: "The DNS-SD service type to join (1-15 letters, digits, hyphens).")
    var service: String = "chirp-chat"

    @Flag(help: "Advertise, browse and listen on the loopback interface only.")
    var loopback = false

    @Option(help: "Seconds to stay after standard input ends, to receive replies.")
    var linger: Double = 0

    @Option(
        help: ArgumentHelp(
            "When standard input is not a terminal: seconds the first line waits for a peer (0: no wait).",
            valueName: "SECONDS"))
    var wait: Double = 10

    @Option(help: "How much the Chirp library logs on standard error (chat reports problems itself).")
    var logLevel: Logger.Level = .critical

    @OptionGroup(title: "Security")
    var secret: SecretOptions

    func validate() throws {
        if let problem = PeerName.problem(with: name) { throw ValidationError("--name: \(problem)") }
        do {
            _ = try ServiceType(service)
        } catch {
            throw ValidationError("--service: \(error)")
        }
        guard linger.isFinite, (0...3600).contains(linger) else {
            throw ValidationError("--linger must be 0 to 3600 seconds, got \(formatSeconds(linger))")
        }
        guard wait.isFinite, (0...3600).contains(wait) else {
            throw ValidationError("--wait must be 0 to 3600 seconds, got \(formatSeconds(wait))")
        }
    }

    /// How a chat ends.
    enum End: Sendable {
        /// Standard input ended; `unreached` lines reached no peer.
        case inputEnded(unreached: Int)
        /// No DNS-SD daemon answers: the core's report.
        case noDaemon(String)
    }

    func run() async throws {
        let level = logLevel
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        var configuration = Configuration(serviceType: service)
        configuration.peerName = name
        configuration.interface = loopback ? .loopback : .any
        configuration.logger = Logger(label: "chat")
        configuration.security = try secret.security()

        let transceiver = Transceiver(configuration: configuration)
        try transceiver.receive(ChatLine.self) { line, sender in
            say("[\(sender.name)] \(line.text)")
        }
        let events = transceiver.makeEvents()
        let discovery = DiscoveryVerdict(transceiver.makeEvents())
        try await transceiver.start()

        let waitForPeers: Duration? = isatty(STDIN_FILENO) == 1 || wait == 0 ? nil : .milliseconds(Int64(wait * 1000))
        let linger = self.linger
        let end: End = await withTaskGroup(of: End?.self) { group in
            group.addTask { await Self.watch(events) }
            group.addTask {
                var unreached = 0
                var waitFirst = waitForPeers
                for await line in StandardInput.lines() {
                    if let timeout = waitFirst {
                        waitFirst = nil
                        await PeerWait.untilSettled(transceiver, timeout: timeout)
                    }
                    if Task.isCancelled { break }  // chat is ending (no DNS-SD daemon)
                    guard !transceiver.connectedPeers.isEmpty else {
                        unreached += 1
                        StandardStreams.warning("no peer is connected: this line reached nobody")
                        continue
                    }
                    do {
                        try await transceiver.send(ChatLine(text: line), to: .all)  // waits for a slow peer
                    } catch is CancellationError {
                        break
                    } catch {
                        StandardStreams.error("\(error)")
                    }
                }
                if linger > 0 { try? await Task.sleep(for: .milliseconds(Int64(linger * 1000))) }
                // Input that ended at once (`chat < /dev/null`) must not hide a missing daemon.
                if case .unavailable(let detail) = await discovery.verdict(within: .seconds(2)) {
                    return .noDaemon(detail)
                }
                return .inputEnded(unreached: unreached)
            }
            var end: End = .inputEnded(unreached: 0)
            while let next = await group.next() {
                if let next {
                    end = next
                    break
                }
            }
            group.cancelAll()
            return end
        }
        await transceiver.shutdown()  // the events are no longer watched: its peers are not reported as leaving
        switch end {
        case .noDaemon(let detail):
            StandardStreams.error(DNSSDDaemon.unavailableMessage(detail), hint: DNSSDDaemon.hint)
            throw ExitCode(DNSSDDaemon.exitStatus)
        case .inputEnded(let unreached) where unreached > 0:
            StandardStreams.error("\(unreached) line\(unreached == 1 ? "" : "s") reached no peer")
            throw ExitCode(2)
        case .inputEnded:
            break
        }
    }

    /// Says on standard error why a peer cannot be reached (a shared secret missing or different), once per reason;
    /// returns `.noDaemon` when no DNS-SD daemon answers before this peer was advertised (nobody could find it),
    /// `nil` when the events end.
    static func watch(_ events: AsyncStream<TransceiverEvent>) async -> End? {
        var reported: Set<String> = []
        var advertised = false
        for await event in events {
            switch event {
            case .peerConnected(let peer): say("* connected to \(peer.name)")
            case .peerDisconnected(let peer): say("* \(peer.name) left")
            case .advertised:
                advertised = true
            case .discoveryUnavailable(let detail) where !advertised:
                return .noDaemon(detail)
            case .connectionRefused(let peer, let reason) where reported.insert("\(peer) \(reason)").inserted:
                StandardStreams.warning("cannot connect to \(peer): \(reason)")
            default:
                break
            }
        }
        return nil
    }
}

/// Whether discovery works: the first sign of it, or the report that no DNS-SD daemon answers.
struct DiscoveryVerdict: Sendable {
    enum Verdict: Sendable {
        case working
        case unavailable(String)
        case unknown
    }

    private let task: Task<Verdict, Never>

    /// Reads `events` (subscribed before the transceiver starts) up to the first verdict, then lets them go.
    init(_ events: AsyncStream<TransceiverEvent>) {
        task = Task {
            for await event in events {
                switch event {
                case .advertised, .instanceFound, .peerAdded, .peerConnected: return .working
                case .discoveryUnavailable(let detail): return .unavailable(detail)
                default: continue
                }
            }
            return .unknown
        }
    }

    /// The verdict, waiting for it at most `timeout`. Once only: it stops reading the events.
    func verdict(within timeout: Duration) async -> Verdict {
        await withTaskGroup(of: Verdict.self) { group in
            group.addTask {
                await withTaskCancellationHandler {
                    await task.value
                } onCancel: {
                    task.cancel()
                }
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return .unknown
            }
            let first = await group.next() ?? .unknown
            group.cancelAll()
            return first
        }
    }
}

/// Waiting for the room before the first piped line is sent.
enum PeerWait {
    /// How long the peers found after the first one have to connect too.
    static let settle: Duration = .seconds(1)

    /// Waits until a peer is connected (at most `timeout`), then until every peer found is connected (at most
    /// ``settle`` more), so that a line sent next reaches the whole room.
    static func untilSettled(_ transceiver: Transceiver, timeout: Duration) async {
        await until(timeout: timeout, transceiver) { !$0.connectedPeers.isEmpty }
        guard !transceiver.connectedPeers.isEmpty else { return }
        await until(timeout: settle, transceiver) { $0.availablePeers.allSatisfy(\.isConnected) }
    }

    /// Waits until `condition` holds, checking it at every event of the transceiver, for at most `timeout`.
    static func until(
        timeout: Duration, _ transceiver: Transceiver, _ condition: @escaping @Sendable (Transceiver) -> Bool
    ) async {
        let events = transceiver.makeEvents()  // before the first check: no change is missed in between
        guard !condition(transceiver) else { return }
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await _ in events where condition(transceiver) { return }
            }
            group.addTask { try? await Task.sleep(for: timeout) }
            await group.next()
            group.cancelAll()
        }
    }
}

// swift-format-ignore: AvoidRetroactiveConformances
// --log-level takes swift-log's levels; neither package declares this conformance, so the app does.
extension Logger.Level: @retroactive ExpressibleByArgument {}

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

/// Writes one line to standard output at once (unbuffered), so pipes see it immediately. Names and texts come from
/// other peers: their control characters are escaped, so a peer can neither forge a line nor drive the terminal.
func say(_ line: String) {
    StandardStreams.output(UntrustedText.escaped(line) + "\n")
}
