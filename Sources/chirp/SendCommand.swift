import ArgumentParser
import Chirp
import ChirpCommands
import ChirpSupport
import Foundation
import Logging

/// `chirp send TYPE MESSAGE-TYPE JSON`: sends one message (or request) to the peers of a service type.
struct SendCommand: AsyncParsableCommand, Sendable {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Send a JSON payload as a message of a given type, or as a request and print the reply.",
        discussion: """
            chirp joins TYPE as a peer, waits (up to --timeout, 10 s by default)
            until a peer connects, sends, and leaves. The payload travels as is
            under MESSAGE-TYPE, the wire name the receiving app registered: a
            ChirpMessage's chirpTypeName (e.g. chat.line, listr.item.add), or else
            the module-qualified Swift type name (e.g. MyApp.ChatLine). The
            payload is checked first: anything but one JSON value as RFC 8259
            defines it (no trailing commas, comments, single quotes, NaN...) is
            refused, and nothing is sent.

            Without --peer, the message goes to every peer connected within about
            a second of the first one; with --peer, to that peer only. With
            --request it goes to one peer as a request (--peer, or the first app
            to connect: chirp's own peers, such as a chirp listen, only when no
            app is there); chirp waits up to --timeout for the reply and prints
            it.

            OUTPUT
              For a message, nothing (a terminal gets a note on standard error).
              With --request: the reply's payload as received, on one line. A
              ChirpCommands app's reply: its text; its data as is (its size
              only, on a terminal).
              With --request --json: {"type", "from", "fromID", "payload"}, the
              payload as a JSON value ({"base64": ...} for raw bytes); a
              ChirpCommands app's reply: its text as a string, its data as
              {"base64": ...}.

            EXIT STATUS
              0 sent, or reply printed; 2 no (matching) peer within --timeout, or
              nothing at --connect; 3 the peer failed: no responder, responder
              error, no reply in time, disconnected; 4 refused (shared secret
              missing or different); 64 bad input, including invalid JSON;
              69 no DNS-SD daemon; 130 interrupted (Ctrl-C, SIGTERM) while
              waiting for a peer or the reply. See 'chirp --help'.

            EXAMPLES
              A chat line to everyone on _chat._tcp:
                chirp send chat chat.line '{"text":"hello"}'
              The same, to alice only:
                chirp send chat chat.line '{"text":"hi alice"}' --peer alice
              The payload from standard input:
                echo '{"text":"from a pipe"}' | chirp send chat chat.line -
              A request to a running listr (service listrctl), and its reply:
                chirp send listrctl listr.item.list '{}' --request
              Without discovery:
                chirp send chat chat.line '{"text":"hi"}' --connect 192.168.1.20:51234
            """)

    @Argument(help: "The service type to join, e.g. chat for _chat._tcp.")
    var type: String

    @Argument(help: ArgumentHelp("The type name the message travels under, e.g. chat.line.", valueName: "message-type"))
    var messageType: String

    @Argument(
        help: ArgumentHelp("The payload: one JSON value, or - to read it from standard input.", valueName: "json"))
    var payload: String

    @Option(
        help: ArgumentHelp(
            "Send to this peer only: its name, its peer id, or the first characters (at least 4) of its id.",
            valueName: "name"))
    var peer: String?

    @Flag(help: "Send a request and print the reply.")
    var request = false

    @Flag(help: "With --request, print the reply as one JSON object with its type and sender.")
    var json = false

    @OptionGroup var options: PeerCommandOptions

    func validate() throws {
        _ = try validateServiceType(type)
        guard !messageType.isEmpty, messageType.utf8.count <= 1024 else {
            throw ValidationError("MESSAGE-TYPE must be 1-1024 bytes")
        }
        if payload != "-" {
            do {
                _ = try JSONText.payload(Data(payload.utf8), source: "the JSON argument")
            } catch let error as CLIError {
                throw ValidationError(error.message)
            }
        }
        try options.checkPeerSelection(peer)
        if json && !request { throw ValidationError("--json formats the reply of --request; add --request") }
    }

    func run() async throws {
        let logger = options.common.makeLogger()
        let serviceType = try validateServiceType(type)
        try await CommandRunner.run { try await send(on: serviceType, logger: logger) }
    }
}

/// What `chirp send` does once its arguments are parsed.
extension SendCommand {
    private func send(on serviceType: ServiceType, logger: Logger) async throws -> ExitStatus {
        // Read and check the payload before joining: bad input never reaches a peer.
        let payload = try readPayload()
        let selector = peer.map(PeerSelector.init)
        let message = RawMessage(typeName: messageType, payload: payload)
        let timeout = options.common.timeout(default: 10)
        return try await PeerSession.run(
            command: "send", serviceType: serviceType, options: options, logger: logger
        ) { session in
            // A request goes to one peer: an app rather than a chirp listen, which answers no request.
            let first = try await session.findPeer(selector, within: timeout, preferringApps: request)
            if request {
                Terminal.status(
                    "waiting up to \(PeerSession.format(timeout)) for \(first.name)'s reply to \(messageType)...")
                let reply = try await session.transceiver.request(
                    message, to: first, as: RawMessage.self, timeout: timeout)
                Terminal.clearStatus()
                try printReply(reply, from: first)
                return .success
            }
            let targets = selector != nil || options.join.endpoint != nil ? [first] : try await session.settledPeers()
            for target in targets {
                try await session.transceiver.send(message, to: target)
            }
            let names = targets.map(\.name).joined(separator: ", ")
            Terminal.note(
                "sent \(messageType) (\(payload.count) bytes) to \(targets.count) peer\(targets.count == 1 ? "" : "s"): \(names)"
            )
            return .success
        }
    }

    private func readPayload() throws -> Data {
        guard payload == "-" else {
            return try JSONText.payload(Data(payload.utf8), source: "the JSON argument")
        }
        if Terminal.stderrIsTTY && isatty(STDIN_FILENO) == 1 {
            Terminal.status("reading the JSON payload from standard input (end with Ctrl-D)...")
        }
        let data = try FileHandle.standardInput.read(upToCount: JSONText.maximumPayloadSize + 1) ?? Data()
        Terminal.clearStatus()
        return try JSONText.payload(data, source: "standard input")
    }

    /// Prints a reply: JSON on one line; a ChirpCommands app's reply as its text (or data); other bytes raw when
    /// standard output is a file or a pipe, else described. What the peer sent is escaped before it reaches a terminal.
    private func printReply(_ reply: RawMessage, from peer: Peer) throws {
        if json {
            var payload = JSONText.embeddable(reply.payload, isBinary: reply.isBinary)
            // A ChirpCommands reply as itself: its text, or its data; not its kind byte and body in base64.
            if reply.isBinary, let command = try? CommandResponse(encoded: reply.payload) {
                switch command {
                case .text(let text): payload = text
                case .data(let data): payload = ["base64": data.base64EncodedString()]
                case .failure(let message): throw CLIError.peerFailure("\(peer.name) failed: \(message)")
                }
            }
            Terminal.line(
                JSONText.line(["type": reply.typeName, "from": peer.name, "fromID": peer.id, "payload": payload]))
        } else if reply.isBinary, let command = try? CommandResponse(encoded: reply.payload) {
            switch command {
            case .text(let text):
                Terminal.raw(UntrustedText.escaped(text, keepingNewlines: true) + (text.hasSuffix("\n") ? "" : "\n"))
            case .data(let data):
                if Terminal.stdoutIsTTY {
                    Terminal.line("<\(data.count) bytes of data; redirect standard output to a file to save them>")
                } else {
                    Terminal.raw(data)
                }
            case .failure(let message):
                throw CLIError.peerFailure("\(peer.name) failed: \(message)")
            }
        } else if reply.isBinary {
            if Terminal.stdoutIsTTY {
                Terminal.line(JSONText.compact(reply.payload, isBinary: true))
            } else {
                Terminal.raw(reply.payload)
            }
        } else {
            let text = String(decoding: reply.payload, as: UTF8.self)
            Terminal.raw(UntrustedText.escaped(text, keepingNewlines: true) + (text.hasSuffix("\n") ? "" : "\n"))
        }
    }
}
