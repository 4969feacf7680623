// chat: a terminal chat room over Chirp. Every line typed is broadcast to the peers of the service; every line
// received is printed with its sender.
//
//     chat --name alice            # in one terminal
//     chat --name bob              # in another, or on another host of the network
//     CHIRP_SECRET=... chat --name carol   # a private room: only peers with the same secret connect
import ArgumentParser
import Chirp
import ChirpCommands
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
            standard input goes to every peer.

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
              64  bad input: an invalid option, service type or secret
              Ctrl-C ends it at once.

            EXAMPLES
              chat --name alice
              echo "hello" | chat --name bot --service team-chat --linger 2
              chat --name alice --secret-file ~/.chat-secret
            """)

    @Option(help: "The name others see.")
    var name: String = Configuration.defaultPeerName

    @Option(help: "The DNS-SD service type to join (1-15 letters, digits, hyphens).")
    var service: String = "chirp-chat"

    @Flag(help: "Advertise, browse and listen on the loopback interface only.")
    var loopback = false

    @Option(help: "Seconds to stay after standard input ends, to receive replies.")
    var linger: Double = 0

    @Option(help: "How much the Chirp library logs on standard error (chat reports problems itself).")
    var logLevel: Logger.Level = .critical

    @OptionGroup(title: "Security")
    var secret: SecretOptions

    func validate() throws {
        guard linger.isFinite, (0...3600).contains(linger) else {
            throw ValidationError("--linger must be 0 to 3600 seconds, got \(linger)")
        }
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
        try await transceiver.start()

        await withTaskGroup(of: Void.self) { group in
            group.addTask { await Self.reportRefusals(events) }
            for await line in StandardInput.lines() {
                do { try transceiver.broadcast(ChatLine(text: line)) } catch { StandardStreams.error("\(error)") }
            }
            if linger > 0 { try? await Task.sleep(for: .seconds(linger)) }
            group.cancelAll()
        }
        await transceiver.shutdown()
    }

    /// Says on standard error why a peer cannot be reached (a shared secret missing or different), once per reason.
    static func reportRefusals(_ events: AsyncStream<TransceiverEvent>) async {
        var reported: Set<String> = []
        for await event in events {
            switch event {
            case .peerConnected(let peer): say("* connected to \(peer.name)")
            case .peerDisconnected(let peer): say("* \(peer.name) left")
            case .connectionRefused(let peer, let reason) where reported.insert("\(peer) \(reason)").inserted:
                StandardStreams.warning("cannot connect to \(peer): \(reason)")
            default: break
            }
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
