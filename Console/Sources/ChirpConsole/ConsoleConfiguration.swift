import Chirp
import ChirpLogs
import Foundation

/// Settings of a ``ChirpConsole``, with documented defaults.
public struct ConsoleConfiguration: Sendable {
    /// The address the web server listens on. Default: `127.0.0.1` (this machine only).
    public var host: String = "127.0.0.1"
    /// The port; 0 picks a free one (`ChirpConsole.run(onListening:)` reports it). Default: 7777.
    public var port: Int = 7777
    /// The directory of the store (`console.sqlite` and its WAL files); created when missing.
    public var dataDirectory: String
    /// A token every request must carry (`Authorization: Bearer TOKEN`, `?token=TOKEN`, or the cookie the console
    /// sets on the first request that carried it). `nil`: none, which is allowed only on a loopback address
    /// (``validate()``). Default: `nil`.
    public var token: String?
    /// How much the store keeps. Default: 1 GiB, 7 days.
    public var retention = ConsoleRetention()
    /// How the console finds and follows log sources: the service type, the interface, the shared secret. Its
    /// `follow`, `history` and `resumeAfter` are set by the console. Default: every `_chirp-logs._tcp` source.
    public var viewer = LogViewerConfiguration()
    /// The service type the Peers tab shows first. Default: `_chirp._tcp`.
    public var defaultPeerService: String = "_chirp._tcp"
    /// At most this many live streams (`/api/stream`) at once; more get 503. Default: 64.
    public var maximumLiveStreams = 64

    /// Settings with every default, the store in `dataDirectory`.
    public init(dataDirectory: String) {
        self.dataDirectory = dataDirectory
    }

    /// The file of the store.
    public var storePath: String { (dataDirectory as NSString).appendingPathComponent("console.sqlite") }

    /// Whether `host` is a loopback address: `localhost`, `::1`, or an IPv4 address in `127.0.0.0/8` written as four
    /// decimal numbers. A name that merely starts with `127.` (`127.attacker.example`, which anyone can point at
    /// 127.0.0.1) is not.
    public static func isLoopback(_ host: String) -> Bool {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if bare == "localhost" || bare == "::1" { return true }
        let parts = bare.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "127" else { return false }
        return parts.allSatisfy { part in
            (1...3).contains(part.utf8.count) && part.utf8.allSatisfy { (0x30...0x39).contains($0) }
                && (Int(part) ?? 256) <= 255
        }
    }

    /// Checks the settings.
    /// - Throws: ``ConsoleConfigurationError`` when listening beyond loopback without a token, or a setting is out of
    ///   range.
    public func validate() throws {
        if token == nil && !Self.isLoopback(host) {
            throw ConsoleConfigurationError(
                "listening on \(host) needs a token: set CHIRP_CONSOLE_TOKEN or let chirp-console generate one")
        }
        if let token, token.count < 16 { throw ConsoleConfigurationError("the token must be at least 16 characters") }
        if !(0...65535).contains(port) { throw ConsoleConfigurationError("port \(port) is out of range") }
        if retention.maximumBytes < 1 << 20 {
            throw ConsoleConfigurationError("the store's size limit must be at least 1 MiB")
        }
        if retention.maximumAge < .seconds(60) {
            throw ConsoleConfigurationError("the store's age limit must be at least a minute")
        }
    }

    /// A random token: 32 characters of base64url (192 bits).
    public static func generateToken() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<24).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
    }
}

/// A setting of ``ConsoleConfiguration`` that cannot work, and why.
public struct ConsoleConfigurationError: Error, CustomStringConvertible, Sendable {
    public var description: String
    init(_ description: String) { self.description = description }
}
