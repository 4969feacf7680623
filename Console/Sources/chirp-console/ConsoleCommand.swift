import ArgumentParser
import Chirp
import ChirpCommands
import ChirpConsole
import ChirpLogs
import Foundation
import Logging

@main
struct ConsoleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chirp-console",
        abstract: "Collect the logs and HTTP calls of the apps on the network, and show them in a browser.",
        discussion: """
            Follows every log source it finds (apps that use ChirpLogs, such as
            logdemo), from their history on, stores their records in a SQLite file
            under --data before acknowledging them (a source's spool lets go only of
            what the console kept), and serves a web page, a JSON API and a live
            stream (Docs/Console.md).

            SECURITY
              By default the console listens on 127.0.0.1 only, without a token. To
              listen elsewhere it needs a token: set CHIRP_CONSOLE_TOKEN, or let it
              generate one (printed once, with the URL to open). Every request must
              carry it. With a shared secret (CHIRP_SECRET or --secret-file) the
              console also follows sources that require one.

            EXAMPLES
              chirp-console
              chirp-console --listen 127.0.0.1:0 --data /tmp/console --interface lo
              CHIRP_CONSOLE_TOKEN=... chirp-console --listen 0.0.0.0:7777

            EXIT STATUS
              0 stopped (Ctrl-C, SIGTERM); 1 cannot listen (the port is in use, the
              address is not this machine's) or another failure; 64 a bad option;
              74 the store cannot be opened or created.
            """,
        version: ToolVersion.current)

    /// Errors in the tools' one style (`chirp-console: error: ...`, Docs/CLI.md), not argument-parser's.
    static func main() async { await CommandLineTool.main(Self.self) }

    @Option(help: ArgumentHelp("The address and port to listen on (port 0: any free port).", valueName: "host:port"))
    var listen = "127.0.0.1:7777"

    @Option(
        help: ArgumentHelp(
            "The directory of the store (default: $XDG_DATA_HOME/chirp-console, or ~/.local/share/chirp-console).",
            valueName: "dir"))
    var data: String?

    @Option(help: ArgumentHelp("Advanced: the service type of the log sources.", valueName: "type"))
    var service = LogSourceConfiguration.defaultServiceType

    @Option(help: ArgumentHelp("Network interface for discovery (lo: this machine only).", valueName: "name"))
    var interface: String?

    @Option(help: ArgumentHelp("The most the store keeps, in MiB; the oldest records go first.", valueName: "MiB"))
    var maxMegabytes = 1024

    @Option(help: ArgumentHelp("The longest the store keeps a record, in hours.", valueName: "hours"))
    var maxHours = 24 * 7

    @Flag(help: "Log what the console does on standard error.")
    var verbose = false

    @OptionGroup(title: "Security") var secret: SecretOptions

    func validate() throws {
        try secret.validate()
        guard Self.split(listen) != nil else { throw ValidationError("--listen: expected HOST:PORT, got \(listen)") }
        // The upper bounds keep the store's byte and second counts far from overflowing (1 TiB, 100 years).
        guard (1...Self.maximumMegabytes).contains(maxMegabytes) else {
            throw ValidationError(
                "--max-megabytes must be 1 to \(Self.maximumMegabytes) (1 TiB), got \(maxMegabytes)")
        }
        guard (1...Self.maximumHours).contains(maxHours) else {
            throw ValidationError("--max-hours must be 1 to \(Self.maximumHours) (100 years), got \(maxHours)")
        }
    }

    /// The largest `--max-megabytes`: 1 TiB.
    static let maximumMegabytes = 1 << 20
    /// The largest `--max-hours`: 100 years.
    static let maximumHours = 100 * 365 * 24

    static func split(_ address: String) -> (String, Int)? {
        guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]),
            (0...65535).contains(port)
        else { return nil }
        var host = String(address[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return (host.isEmpty ? "127.0.0.1" : host, port)
    }

    func run() async throws {
        guard let (host, port) = Self.split(listen) else { throw ValidationError("--listen: expected HOST:PORT") }
        let environment = ProcessInfo.processInfo.environment
        var configuration = ConsoleConfiguration(dataDirectory: data ?? Self.defaultDataDirectory(environment))
        configuration.host = host
        configuration.port = port
        configuration.retention = ConsoleRetention(
            maximumBytes: maxMegabytes << 20, maximumAge: .seconds(maxHours * 3600))
        configuration.viewer.serviceType = service
        configuration.viewer.security = try secret.security()
        if let interface {
            configuration.viewer.transceiver.interface = interface == "lo" ? .loopback : .named(interface)
        }
        var printToken = false
        if let token = environment["CHIRP_CONSOLE_TOKEN"], !token.isEmpty {
            configuration.token = token
        } else if !ConsoleConfiguration.isLoopback(host) {
            configuration.token = ConsoleConfiguration.generateToken()
            printToken = true
        }
        do {
            try configuration.validate()
        } catch {
            throw ValidationError("\(error)")
        }
        var logger = Logger(label: "chirp-console") { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .info
            return handler
        }
        logger.logLevel = verbose ? .info : .warning
        configuration.viewer.transceiver.logger = logger
        let shownHost = host.contains(":") ? "[\(host)]" : host
        let token = printToken ? configuration.token : nil
        let storePath = configuration.storePath
        let console = ChirpConsole(configuration: configuration, logger: logger)
        do {
            try await console.run(handlesSignals: true) { port in
                // Written at once (not through stdio's buffer): scripts and tests wait for this line.
                let url = "http://\(shownHost == "0.0.0.0" ? "127.0.0.1" : shownHost):\(port)/"
                var lines = "Chirp Console: \(url)\(token.map { "?token=\($0)" } ?? "")\n"
                if let token { lines += "token (shown once): \(token)\n" }
                lines += "store: \(storePath)\n"
                FileHandle.standardOutput.write(Data(lines.utf8))
            }
        } catch let error as ConsoleStoreError {
            StandardStreams.error("\(error)")
            throw ExitCode(74)
        } catch let error as ConsoleListenError {
            if error.portInUse {
                StandardStreams.error(
                    "port \(error.port) is in use on \(shownHost): another chirp-console, or another server, listens there",
                    hint: "stop it, or choose another port: --listen \(shownHost):PORT (port 0: any free port)")
            } else {
                StandardStreams.error("\(error)", hint: "listen on an address of this machine: --listen 127.0.0.1:PORT")
            }
            throw ExitCode(1)
        } catch let error as ConsoleConfigurationError {
            throw ValidationError(error.description)
        }
    }

    static func defaultDataDirectory(_ environment: [String: String]) -> String {
        if let xdg = environment["XDG_DATA_HOME"], !xdg.isEmpty {
            return (xdg as NSString).appendingPathComponent("chirp-console")
        }
        let home = environment["HOME"] ?? FileManager.default.homeDirectoryForCurrentUser.path
        return (home as NSString).appendingPathComponent(".local/share/chirp-console")
    }
}
