import ArgumentParser
import Chirp
import Foundation
import Logging
import NIOConcurrencyHelpers

/// `chirp listen TYPE`: joins a service type as a peer and prints every message it receives.
struct ListenCommand: AsyncParsableCommand, Sendable {
    static let configuration = CommandConfiguration(
        commandName: "listen",
        abstract: "Join a service type as a peer and print every message received.",
        discussion: """
            chirp joins TYPE like any other peer: it advertises itself (as
            chirp-listen-HOSTNAME-PID unless --name says otherwise, marked
            chirp-role=listener, so that chirp send --request and chirp ping
            pick an app over it), connects to every peer it discovers and accepts
            their connections. Broadcasts reach it, and so do messages sent to it
            by name. It answers no request (the requester is told "no
            responder").

            OUTPUT
              One line per message: local time, sender, message type, payload as
              compact JSON:
                14:03:07.412  alice  chat.line  {"text":"hi"}
              A payload that is not JSON (raw bytes) shows as <N bytes: hex...>.
              With --json: one JSON object per line, with the keys time (ISO 8601,
              UTC), sender, senderID, type and payload (the JSON value itself, or
              {"base64": ...} for raw bytes).
              On a terminal, peers joining and leaving are noted on standard error.
              A peer that refuses the connection (a shared secret missing or
              different) is reported on standard error, always.

            EXIT STATUS
              0 when stopped (Ctrl-C, SIGTERM, --timeout, or --count messages
              printed), or when the reader of its output goes away (| head -1);
              2 when --timeout ends the run before --count messages arrived, or
              nothing answers at --connect; 4 the peer at --connect refused
              (shared secret missing or different); 64 bad input; 69 no DNS-SD
              daemon. See 'chirp --help'.

            EXAMPLES
              Everything said on _chat._tcp:
                chirp listen chat
              Only chat lines, as JSON lines, piped to jq:
                chirp listen chat --message-type chat.line --json | jq -r .payload.text
              Wait for one message, at most 30 seconds:
                chirp listen chat --count 1 --timeout 30
              Listen to a peer that discovery cannot reach:
                chirp listen chat --connect 192.168.1.20:51234
            """)

    @Argument(help: "The service type to join, e.g. chat for _chat._tcp.")
    var type: String

    @Option(
        name: .customLong("message-type"), parsing: .singleValue,
        help: ArgumentHelp(
            "Print only messages of this type (repeatable).", valueName: "name"))
    var messageTypes: [String] = []

    @Option(name: [.short, .long], help: ArgumentHelp("Exit after printing this many messages.", valueName: "n"))
    var count: Int?

    @Flag(help: "Print one JSON object per line.")
    var json = false

    @OptionGroup var options: PeerCommandOptions

    func validate() throws {
        _ = try validateServiceType(type)
        if let count, count < 1 { throw ValidationError("--count must be at least 1, got \(count)") }
        if let empty = messageTypes.first(where: { $0.isEmpty || $0.utf8.count > 1024 }) {
            throw ValidationError("--message-type must be 1-1024 bytes, got '\(empty)'")
        }
    }

    func run() async throws {
        let serviceType = try validateServiceType(type)
        let logger = options.common.makeLogger()
        try await CommandRunner.run(watchesOutput: true) { try await listen(on: serviceType, logger: logger) }
    }
}

/// What `chirp listen` does once its arguments are parsed.
extension ListenCommand {
    struct Received: Sendable {
        var message: RawMessage
        var sender: Peer
        var time: Date
    }

    private func listen(on serviceType: ServiceType, logger: Logger) async throws -> ExitStatus {
        // Messages through the transceiver's bounded sequence: when standard output blocks (a pipe nobody reads),
        // chirp stops reading the senders instead of buffering what they send (Configuration.backpressure).
        let sequence = NIOLockedValueBox<MessageSequence<RawMessage>?>(nil)
        let configure: (Transceiver) -> Void = { transceiver in
            // Every message, whatever its type: `messages(of:)` never throws for RawMessage.
            sequence.withLockedValue { $0 = try? transceiver.messages(of: RawMessage.self) }
        }
        return try await PeerSession.run(
            command: "listen", serviceType: serviceType, options: options, logger: logger,
            configure: configure
        ) { session in
            guard let messages = sequence.withLockedValue({ $0 }) else { return .failure }
            if options.join.endpoint != nil {
                let peer = try await session.findPeer(nil, within: options.common.timeout(default: 10))
                Terminal.note("connected to \(peer.name) (\(peer.id.prefix(8)))")
            }
            return try await printMessages(session, messages: messages)
        }
    }

    private func printMessages(_ session: PeerSession, messages: MessageSequence<RawMessage>) async throws
        -> ExitStatus
    {
        let filter = Set(messageTypes)
        let waiting =
            "listening on \(session.typeText) as \(session.transceiver.configuration.peerName)"
            + (filter.isEmpty ? "" : " for \(filter.sorted().joined(separator: ", "))")
            + (options.common.timeout.map { " for \(PeerSession.format(.milliseconds(Int64($0 * 1000))))" } ?? "")
            + " (Ctrl-C to stop)..."
        Terminal.status(waiting)
        let usesDiscovery = options.join.endpoint == nil
        let events = session.events
        let wanted = count
        let json = self.json
        return try await withThrowingTaskGroup(of: ExitStatus.self) { group in
            defer { group.cancelAll() }
            group.addTask {
                var printed = 0
                for await message in messages where filter.isEmpty || filter.contains(message.payload.typeName) {
                    let received = Received(message: message.payload, sender: message.sender, time: Date())
                    Terminal.line(json ? Self.jsonLine(received) : Self.textLine(received))
                    Terminal.status(waiting)
                    printed += 1
                    if let wanted, printed >= wanted { return .success }
                }
                throw CancellationError()
            }
            group.addTask {
                var warned: Set<String> = []
                for await event in events {
                    switch event {
                    case .connectionRefused(let peer, let reason):
                        // Always on standard error: a peer that cannot connect sends nothing, and this says why.
                        let text = PeerSession.refusalText(peer: peer, reason: reason)
                        // A peer named by its address has a new port each time: once per reason is enough.
                        let key = peer.first.map { $0.isNumber || $0 == "[" } == true ? reason : text
                        if warned.insert(key).inserted { Terminal.warning("cannot connect: \(text)") }
                    case .discoveryUnavailable(let message) where usesDiscovery:
                        throw CLIError.noDaemon(message)
                    case .peerConnected(let peer):
                        Terminal.note("* \(peer.name) (\(peer.id.prefix(8))) connected")
                        Terminal.status(waiting)
                    case .peerDisconnected(let peer):
                        Terminal.note("* \(peer.name) (\(peer.id.prefix(8))) left")
                        Terminal.status(waiting)
                    default:
                        continue
                    }
                }
                throw CancellationError()
            }
            if options.common.timeout != nil {
                let timeout = options.common.timeout(default: 0)
                group.addTask {
                    try await Task.sleep(for: timeout)
                    if let wanted {
                        throw CLIError.nothingFound(
                            "fewer than \(wanted) message\(wanted == 1 ? "" : "s") arrived within \(PeerSession.format(timeout))"
                        )
                    }
                    return .success
                }
            }
            do {
                return try await group.next() ?? .success
            } catch is CancellationError {
                // Ctrl-C: the normal way to end a listen.
                return .success
            }
        }
    }

    static func textLine(_ received: Received) -> String {
        [
            JSONText.clockTime(received.time), received.sender.name, received.message.typeName,
            JSONText.compact(received.message.payload, isBinary: received.message.isBinary)
        ].joined(separator: "  ")
    }

    static func jsonLine(_ received: Received) -> String {
        JSONText.line([
            "time": JSONText.timestamp(received.time),
            "sender": received.sender.name,
            "senderID": received.sender.id,
            "type": received.message.typeName,
            "payload": JSONText.embeddable(received.message.payload, isBinary: received.message.isBinary)
        ])
    }
}
