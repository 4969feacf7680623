// chirp: see and poke a Chirp network from a terminal. Each subcommand lives in its own file; shared options in
// Options/, exit statuses, output and waiting helpers in Support/.
import ArgumentParser
import ChirpCommands

@main
struct ChirpTool: AsyncParsableCommand {
    static func main() async { await CommandLineTool.main(Self.self) }

    static let configuration = CommandConfiguration(
        commandName: "chirp",
        abstract: "See and poke the Chirp peers on the local network.",
        discussion: """
            Chirp peers find each other through DNS-SD (Avahi on Linux, Bonjour on
            macOS), connect over TCP and exchange typed messages. chirp works with
            any of them, whatever language or app is on the other side: it lists
            peers (browse), prints what they send (listen), sends them JSON
            messages and requests (send), measures round trips (ping), sends and
            receives files (send-file, receive-files) and follows the logs and
            HTTP calls of apps that stream them (logs). It prints a device
            identity's fingerprint (id) and edits whom an identity trusts (trust).

            A TYPE is a DNS-SD service type without underscore or protocol: chat
            means _chat._tcp. It has 1-15 letters, digits and hyphens, at least one
            letter (RFC 6763). Case does not matter: chirp uses it in lower case.

            Peers that require a shared secret (chirp browse shows "required")
            are reached with the same secret, from the CHIRP_SECRET environment
            variable or --secret-file PATH; never on the command line, where
            every user of the machine can read it (--secret VALUE is refused).
            Peers that use device identities (chirp browse shows "identity") are
            reached with an identity of this device: --identity NAME or the
            CHIRP_IDENTITY environment variable; the peer's owner must trust its
            fingerprint (chirp id NAME). See Docs/Security.md.

            Results go to standard output, errors to standard error. While a
            command waits, it says what for on standard error, only when that is a
            terminal: piped output holds results only. When the reader of the
            output goes away (| head -1), browse, listen, ping and logs end at
            once, with status 0.

            EXIT STATUS
              0    success
              1    other failure (e.g. the listening socket could not be opened)
              2    nothing found in time: no (matching) peer, no service, too few
                   messages, nothing answering at --connect
              3    peer failure: the peer left, had no responder or its
                   responder failed, a reply or pong did not come in time
              4    refused: the peer requires a shared secret and none was
                   given, the shared secret does not match, or the peer's
                   accept policy did not accept chirp
              64   bad input: an invalid argument, option, service type or JSON
                   payload (nothing was sent)
              69   no DNS-SD daemon answers: start avahi-daemon, or use --connect
              130  interrupted (Ctrl-C or SIGTERM) while waiting for a peer or a
                   reply

            EXAMPLES
              Every Chirp peer (and other DNS-SD service) on the network, once:
                chirp browse --once
              The peers of one service type, live, as they come and go:
                chirp browse chat
              Every message sent on a service type, as JSON lines:
                chirp listen chat --json
              A chat line to every peer:
                chirp send chat chat.line '{"text":"hello from the terminal"}'
              A request to one peer, and its reply:
                chirp send TYPE MESSAGE-TYPE '{}' --peer alice --request
              Three round trips to a peer:
                chirp ping chat --peer alice -c 3
              The live logs of every app that streams them, warnings and worse:
                chirp logs --level warning
              Files into ~/inbox, and a file sent there from another terminal:
                chirp receive-files ~/inbox --name lab-pc
                chirp send-file results.tar.gz --to lab-pc
              A peer that requires a shared secret, the secret in a file:
                chirp ping chat --peer alice --secret-file ~/.chat-secret
              This device's identity, then a peer that trusts it:
                chirp id laptop
                chirp ping chat --peer alice --identity laptop

            See 'chirp help <subcommand>' for each command, and Docs/CLI.md.
            """,
        version: ToolVersion.current,
        subcommands: [
            BrowseCommand.self,
            ListenCommand.self,
            SendCommand.self,
            PingCommand.self,
            SendFileCommand.self,
            ReceiveFilesCommand.self,
            LogsCommand.self,
            ConsoleCommand.self,
            IdentityCommand.self,
            TrustCommand.self
        ]
    )
}
