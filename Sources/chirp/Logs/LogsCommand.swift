import ArgumentParser
import Chirp
import ChirpCommands
import ChirpLogs
import Foundation
import Logging
import NIOConcurrencyHelpers

/// `chirp logs`: follow the logs (and HTTP calls) of apps that use ChirpLogs, live, from any nearby host.
struct LogsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "logs",
        abstract: "Follow the logs and HTTP API calls of apps on this network, live.",
        discussion: """
            Every app that streams its logs with ChirpLogs advertises itself as _chirp-logs._tcp. `chirp logs` finds \
            them all (or the one named), prints their recent history and then every new record as it is logged, in \
            order, with nothing repeated or silently skipped: records a source could not keep are announced as lost. \
            A source that goes away is announced, and followed again when it comes back.

            Apps that require a shared secret (chirp browse chirp-logs shows "required") are followed with the \
            same secret, from the CHIRP_SECRET environment variable or --secret-file PATH; never on the command \
            line (--secret VALUE is refused). Without it, or with another one, nothing of the app is received: \
            chirp logs says why and, when no other source is being followed, exits with status 4.

            Colours (levels: trace/debug dim, warning yellow, error red; HTTP: request cyan, success green, \
            failure red) are used only when standard output is a terminal and NO_COLOR is not set, unless \
            --color says otherwise. Notices about sources go to standard error.

            EXAMPLES
              chirp logs                              every app on the network
              chirp logs orders --level warning       one app, warnings and worse
              chirp logs --label 'orders.*' --grep 'timeout|refused'
              chirp logs --http                       one line per HTTP exchange
              chirp logs orders --http --detail       exchanges in full, pretty JSON
              chirp logs --json | jq 'select(.level == "error")'
              chirp logs orders --no-follow > o.log   the history, then exit
              chirp logs --timeout 60 > o.log         one minute of records, then exit
              chirp logs --connect 10.0.0.7:50123     skip discovery
              CHIRP_SECRET="$(cat ~/.orders-secret)" chirp logs orders
              chirp logs orders --secret-file ~/.orders-secret

            EXIT STATUS
              0   done (--no-follow), or stopped while following (Ctrl-C,
                  SIGTERM, --timeout, or the reader of its output gone)
              2   --no-follow found no matching source in time
              4   refused: the app requires a shared secret and none was given,
                  or the shared secret does not match (or the app uses none),
                  or its accept policy refused chirp; and no other source is
                  being followed
              64  bad input: an unknown level, an invalid regular expression,
                  a malformed HOST:PORT, a secret on the command line or an
                  unreadable --secret-file
              69  no DNS-SD daemon answers (without --connect)
            """)

    @Argument(help: "Only this app (its advertised name).")
    var app: String?

    @Option(help: "Only sources on this host.")
    var host: String?

    @Option(help: "Only the source with this process id.")
    var pid: Int32?

    @Flag(
        inversion: .prefixedNo,
        help: "Keep following new records after the history (--no-follow prints the history and exits).")
    var follow = true

    @Option(help: "Minimum level: trace, debug, info, notice, warning, error, critical.")
    var level: String?

    @Option(help: "Only records of this logger label ('*' matches anything; repeat for several).")
    var label: [String] = []

    @Option(help: "Only records matching this regular expression (message, metadata, URL); matches are highlighted.")
    var grep: String?

    @Flag(help: "The API view: one line per HTTP exchange (time, method, status, duration, URL).")
    var http = false

    @Flag(help: "With --http: every exchange in full, headers and pretty-printed bodies.")
    var detail = false

    @Flag(help: "One JSON object per line (NDJSON), records and notices, for jq and other tools.")
    var json = false

    @Option(help: "Records of history to ask each source for (default: the source's own setting, 1000 unless changed).")
    var history: Int?

    @Option(
        help: ArgumentHelp("Connect to a source at HOST:PORT instead of discovering sources.", valueName: "host:port"))
    var connect: String?

    @Option(help: "Colours: auto, always or never.")
    var color: String = "auto"

    @Option(help: ArgumentHelp("Advanced: the service type sources advertise.", valueName: "type"))
    var service: String = LogSourceConfiguration.defaultServiceType

    /// `--secret-file PATH` or `CHIRP_SECRET`; `--secret VALUE` is refused.
    @OptionGroup var secret: SecretOptions

    /// `--timeout` (with --no-follow: how long to look for sources; following: when to stop), `--interface` and
    /// `--log-level`, as every subcommand takes them.
    @OptionGroup(title: "Common Options")
    var common: CommonOptions

    /// The spelling of `--timeout` for `--no-follow` before chirp logs took the common options; hidden.
    @Option(help: .private)
    var wait: Double?

    /// The spelling of `--log-level info` before chirp logs took the common options; hidden.
    @Flag(help: .private)
    var verbose = false

    func validate() throws {
        if let level, Logger.Level(rawValue: level.lowercased()) == nil {
            throw ValidationError(
                "unknown level '\(level)': use trace, debug, info, notice, warning, error or critical")
        }
        if let grep {
            do { _ = try LogPattern(grep) } catch {
                throw ValidationError("invalid --grep expression '\(grep)': \(error)")
            }
        }
        if ColorChoice(rawValue: color) == nil { throw ValidationError("--color must be auto, always or never") }
        if detail && !http { throw ValidationError("--detail goes with --http") }
        if let connect, LogsEndpoint(connect) == nil {
            throw ValidationError("--connect wants HOST:PORT (e.g. 127.0.0.1:50123), got '\(connect)'")
        }
        if let history, history < 0 { throw ValidationError("--history must be 0 or more") }
        _ = try validateServiceType(service)
        if let wait, !(wait >= 0 && wait <= 3600) {
            throw ValidationError("--wait must be between 0 and 3600 seconds, got \(formatSeconds(wait))")
        }
    }

    func run() async throws {
        // The library's own log, only with --log-level: otherwise nothing but chirp's own lines reach the terminal.
        var common = self.common
        if verbose && common.logLevel == .off { common.logLevel = .info }
        let logger = common.makeLogger()
        var configuration = LogViewerConfiguration()
        configuration.serviceType = try validateServiceType(service).name
        configuration.selector = LogSourceSelector(appName: app, host: host, processID: pid)
        configuration.follow = follow
        configuration.history = history
        if !follow {
            configuration.discoveryTime =
                common.timeout != nil ? common.timeout(default: 3) : .milliseconds(Int((wait ?? 3) * 1000))
        }
        if let connect, let endpoint = LogsEndpoint(connect) { configuration.endpoint = (endpoint.host, endpoint.port) }
        configuration.transceiver.logger = logger
        // A name of this process's own, and marked as a tool, as chirp's other peers.
        configuration.transceiver.peerName = JoinOptions.defaultName(command: "logs")
        configuration.transceiver.metadata[ToolRole.key] = ToolRole.cli
        configuration.transceiver.interface = common.chirpInterface
        if connect == nil { common.warnIfInterfaceIsUnusable() }
        // Following, --timeout ends the run (as for listen and browse).
        let runFor: Duration? = follow && common.timeout != nil ? common.timeout(default: 0) : nil

        var filter = LogFilter()
        filter.minimumLevel = level.flatMap { Logger.Level(rawValue: $0.lowercased()) }
        filter.labels = label
        filter.pattern = try grep.map { try LogPattern($0) }
        filter.httpOnly = http
        let useColor = (ColorChoice(rawValue: color) ?? .auto).resolved()
        let formatter = LogFormatter(
            useColor: useColor, highlight: filter.pattern, showHost: true, localHost: Configuration.defaultPeerName)
        let printer = LogsPrinter(
            formatter: formatter, filter: filter, mode: json ? .json : http ? (detail ? .httpDetail : .http) : .text,
            follow: follow)
        let secret = self.secret
        let follow = self.follow
        let service = self.service
        let usesDiscovery = connect == nil
        let viewerConfiguration = configuration
        try await CommandRunner.run(watchesOutput: true) {
            var configuration = viewerConfiguration
            do {
                configuration.security = try secret.security()
            } catch {
                throw CLIError.badInput("\(error)")  // checked by validate() already; the file changed since
            }
            let configured = configuration
            guard let runFor else {
                return try await Self.follow(
                    configuration: configured, printer: printer, follow: follow, service: service,
                    usesDiscovery: usesDiscovery)
            }
            return try await withThrowingTaskGroup(of: ExitStatus.self) { group in
                group.addTask {
                    try await Self.follow(
                        configuration: configured, printer: printer, follow: follow, service: service,
                        usesDiscovery: usesDiscovery)
                }
                group.addTask {
                    try await Task.sleep(for: runFor)
                    return .success
                }
                defer { group.cancelAll() }
                return try await group.next() ?? .success
            }
        }
    }

    /// Follows the sources until done (without --follow), interrupted (status 0 while following) or refused.
    private static func follow(
        configuration: LogViewerConfiguration, printer: LogsPrinter, follow: Bool, service: String, usesDiscovery: Bool
    ) async throws -> ExitStatus {
        let gate = RefusalGate()
        let viewer = LogViewer(configuration: configuration)
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    try await viewer.run { event in
                        if case .discoveryUnavailable(let message) = event, usesDiscovery {
                            throw CLIError.noDaemon(message)
                        }
                        gate.observe(event)
                        printer.handle(event)
                    }
                }
                group.addTask { try await gate.failWhenRefusedWithNothingFollowed(grace: Self.refusalGrace) }
                _ = try await group.next()
                group.cancelAll()
            }
            return .success
        } catch is RefusalGate.Refused {
            throw CLIError(
                status: .refused, message: "nothing to follow: the matching log sources refused this viewer (see above)"
            )
        } catch let error as LogViewerError where error.code == .refused {
            // Each refusal was printed as it came.
            throw CLIError(
                status: .refused, message: "nothing to follow: the matching log sources refused this viewer (see above)"
            )
        } catch let error as LogViewerError {
            throw CLIError.nothingFound(
                "\(error)",
                hint: "is the app running with ChirpLogs, on a network this host can reach? "
                    + "Try `avahi-browse -rt _\(service)._tcp`, or --connect HOST:PORT")
        } catch is CancellationError where follow {
            return .success  // Ctrl-C or SIGTERM while following: the documented way to stop
        }
    }
}

/// `HOST:PORT` (or `[v6]:PORT`).
struct LogsEndpoint {
    var host: String
    var port: Int

    init?(_ text: String) {
        guard let colon = text.lastIndex(of: ":") else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty, let port = Int(text[text.index(after: colon)...]), (1...65535).contains(port) else {
            return nil
        }
        self.host = host
        self.port = port
    }
}

/// Ends `chirp logs` with status 4 when sources refused it (a shared secret missing or different, an accept policy)
/// and, a moment after the refusal, no source is being followed.
final class RefusalGate: Sendable {
    /// Thrown by ``failWhenRefusedWithNothingFollowed(grace:)``.
    struct Refused: Error {}

    /// The peer ids of the sources followed now.
    private let followed = NIOLockedValueBox<Set<String>>([])
    private let refusals: AsyncStream<Void>
    private let sink: AsyncStream<Void>.Continuation

    init() {
        (refusals, sink) = AsyncStream.makeStream(of: Void.self)
    }

    /// Keeps track of the sources followed, and of refusals.
    func observe(_ event: LogViewerEvent) {
        switch event {
        case .following(let source, _): followed.withLockedValue { _ = $0.insert(source.peerID) }
        case .sourceLost(let source): followed.withLockedValue { _ = $0.remove(source.peerID) }
        case .refused: sink.yield()
        default: break
        }
    }

    /// Throws ``Refused`` when, `grace` after a refusal (other sources may still connect meanwhile), no source is
    /// being followed; runs until cancelled otherwise.
    func failWhenRefusedWithNothingFollowed(grace: Duration) async throws {
        for await _ in refusals {
            try await Task.sleep(for: grace)
            if followed.withLockedValue({ $0.isEmpty }) { throw Refused() }
        }
    }
}

extension LogsCommand {
    /// How long a refused `chirp logs` still waits for another source before it exits with status 4.
    static let refusalGrace: Duration = .milliseconds(1500)
}
