import ArgumentParser
import Chirp
import Foundation

import struct ChirpCommands.SecretOptions

/// Options of the commands that join a service type as a peer (listen, send, ping), the shared secret included.
struct JoinOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Connect to the peer at this address instead of discovering peers.",
            discussion: "For networks where multicast DNS does not reach (VPNs, containers, other subnets).",
            valueName: "host:port"))
    var connect: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The peer name this command joins under (default: chirp-COMMAND-HOSTNAME-PID, e.g. chirp-listen-myhost-4242).",
            valueName: "name"))
    var name: String?

    /// `--secret-file PATH` or `CHIRP_SECRET`; `--secret VALUE` is refused.
    @OptionGroup var secret: SecretOptions

    func validate() throws {
        if let connect { _ = try Self.parse(connect) }
        if let name, name.isEmpty || name.utf8.count > 200 {
            throw ValidationError("--name must be 1-200 bytes")
        }
    }

    /// `--connect` split into host and port, if given.
    var endpoint: (host: String, port: Int)? {
        connect.flatMap { try? Self.parse($0) }
    }

    /// The peer name to use: `--name`, or one of this process's own, which says what runs where (two commands on
    /// one host never share a name).
    func peerName(command: String) -> String {
        name ?? Self.defaultName(command: command)
    }

    /// `chirp-listen-myhost-4242`.
    static func defaultName(command: String) -> String {
        "chirp-\(command)-\(Configuration.defaultPeerName)-\(ProcessInfo.processInfo.processIdentifier)"
    }

    /// Parses `HOST:PORT`, `[IPV6]:PORT` (a link-local IPv6 address with its interface: `[fe80::1%eth0]:PORT`).
    static func parse(_ text: String) throws -> (host: String, port: Int) {
        let problem = ValidationError(
            "--connect takes HOST:PORT (e.g. 192.168.1.20:51234 or [fe80::1%eth0]:51234), got '\(text)'")
        guard let colon = text.lastIndex(of: ":") else { throw problem }
        var host = String(text[..<colon])
        let portText = text[text.index(after: colon)...]
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty, let port = Int(portText), (1...65535).contains(port) else { throw problem }
        return (host, port)
    }
}
