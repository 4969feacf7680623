// chat: a terminal chat room over Chirp. Every line typed is broadcast to the peers of the service; every line
// received is printed with its sender.
//
//     chat --name alice            # in one terminal
//     chat --name bob              # in another, or on another host of the network
//     CHIRP_SECRET=... chat --name carol   # a private room: only peers with the same secret connect
import ArgumentParser
import Chirp
import struct ChirpCommands.SecretOptions
import Foundation
import Logging

/// One line of chat, as it travels between peers.
struct ChatLine: Codable, Sendable, ChirpMessage {
    static let chirpTypeName = "chat.line"
    var text: String
}

@main
struct Chat: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "A chat room on the local network: broadcasts each line you type, prints what others type.",
        discussion: """
            Peers of the same service type find each other through DNS-SD (Avahi or Bonjour) and connect directly.
            Output lines: "[NAME] TEXT" for a message, "* connected to NAME" and "* NAME left" for peers.
            With a shared secret (the CHIRP_SECRET environment variable, or --secret-file PATH), only peers with the
            same secret connect, and everything is encrypted; peers that cannot connect are reported on standard
            error ("chat: cannot connect to NAME: REASON").

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

    @Option(help: "Log level on standard error: trace, debug, info, notice, warning, error, critical.")
    var logLevel: Logger.Level = .warning

    @OptionGroup(title: "Security")
    var secret: SecretOptions

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
        transceiver.receive(ChatLine.self) { line, sender in
            say("[\(sender.name)] \(line.text)")
        }
        transceiver.peerConnected = { peer in say("* connected to \(peer.name)") }
        transceiver.peerDisconnected = { peer in say("* \(peer.name) left") }
        let events = transceiver.events
        try await transceiver.resume()

        await withTaskGroup(of: Void.self) { group in
            group.addTask { await Self.reportRefusals(events) }
            for await line in StandardInput.lines() {
                do { try transceiver.broadcast(ChatLine(text: line)) } catch { complain("\(error)") }
            }
            if linger > 0 { try? await Task.sleep(for: .seconds(linger)) }
            group.cancelAll()
        }
        await transceiver.stop()
    }

    /// Says on standard error why a peer cannot be reached (a shared secret missing or different), once per reason.
    static func reportRefusals(_ events: AsyncStream<TransceiverEvent>) async {
        var reported: Set<String> = []
        for await event in events {
            if case .connectionRefused(let peer, let reason) = event, reported.insert("\(peer) \(reason)").inserted {
                complain("cannot connect to \(peer): \(reason)")
            }
        }
    }
}

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

/// Writes one line to standard output at once (unbuffered), so pipes see it immediately.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// Writes one `chat: ` line to standard error.
func complain(_ line: String) {
    FileHandle.standardError.write(Data(("chat: " + line + "\n").utf8))
}
