import ArgumentParser
import Chirp
import ChirpDiscovery
import Foundation
import Logging

/// `chirp browse [TYPE]`: the peers of a service type (or every service on the network), live or once.
struct BrowseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "browse",
        abstract: "List the peers of a service type, or every DNS-SD service on the network, as they come and go.",
        discussion: """
            Browses DNS-SD without joining: nothing is advertised and no connection
            is made. Each instance is resolved to its host, address:port and TXT
            record. For a Chirp peer that gives its name, its peer id (the first 8
            characters are shown; --peer accepts them) and its metadata; other
            services show their instance name and TXT entries. The SECRET column
            says whether a peer requires a shared secret ("required": connect
            with CHIRP_SECRET or --secret-file), the first characters of its
            fingerprint for a peer with a device identity ("chirp:abcd-efgh":
            connect with --identity NAME once its owner trusts yours), "no" for
            an open peer, "-" for a service that is not a Chirp peer. The secret
            itself is never advertised.

            Without TYPE, chirp enumerates the service types on the network first
            (a browse of _services._dns-sd._udp, RFC 6763 section 9), then browses
            every TCP type found, and adds a TYPE column. Both Bonjour and Avahi's
            Bonjour compatibility layer support this enumeration.

            OUTPUT
              On a terminal: a table, redrawn as instances come and go.
              Into a pipe: one line per change, "+ NAME HOST ADDRESS PEER-ID
              SECRET METADATA" when an instance appears, "- ..." when it leaves.
              With --once: the table of what was found within --timeout (3 s by
              default), then exit.
              With --json: one JSON object per line, with the keys event ("found"
              or "lost"), type, instance, name, host, port, addresses, peerID,
              protocolVersion, requiresSecret (true or false), fingerprint (for
              a peer with a device identity) and metadata;
              without TYPE, also {"event": "type-found" or "type-lost", "type"}
              for each service type.

            EXIT STATUS
              0 when stopped (Ctrl-C, SIGTERM or --timeout), when the reader of
              its output goes away (| head -1), or --once found something;
              2 when --once found nothing; 64 bad input; 69 no DNS-SD daemon.
              See 'chirp --help'.

            EXAMPLES
              Every service on the network, once:
                chirp browse --once
              The peers of _chat._tcp, live, until Ctrl-C:
                chirp browse chat
              Peers on this machine only, as JSON lines, for 10 seconds:
                chirp browse chat --interface lo --json --timeout 10
              Just the names of the peers:
                chirp browse chat --once --json | jq -r .name
            """)

    @Argument(help: "The service type, e.g. chat for _chat._tcp. Omit it to browse every service type.")
    var type: String?

    @Flag(help: "Print what is found within --timeout (default 3 s), then exit.")
    var once = false

    @Flag(help: "Print one JSON object per line instead of a table.")
    var json = false

    @OptionGroup(title: "Common Options")
    var common: CommonOptions

    func validate() throws {
        if let type { _ = try validateServiceType(type) }
    }

    func run() async throws {
        let run = BrowseRun(
            serviceType: try type.map(validateServiceType), once: once, json: json,
            timeout: once ? common.timeout(default: 3) : common.timeout.map { _ in common.timeout(default: 0) },
            interface: common.chirpInterface, namedInterface: common.namedInterface, logger: common.makeLogger())
        common.warnIfInterfaceIsUnusable()
        try await CommandRunner.run(watchesOutput: true) { try await run.run() }
    }
}

/// What `chirp browse` does once its arguments are parsed.
private struct BrowseRun: Sendable {
    let serviceType: ServiceType?
    let once: Bool
    let json: Bool
    /// When to stop; `nil` = at Ctrl-C.
    let timeout: Duration?
    let interface: Configuration.Interface
    /// `--interface` when it names one interface, for the diagnosis when nothing is found there.
    let namedInterface: String?
    let logger: Logger

    /// Everything the browse loop reacts to, merged into one stream.
    enum Update: Sendable {
        case instance(type: String, ServiceBrowserEvent)
        case serviceType(ServiceTypeBrowserEvent)
        case deadline
    }

    var what: String { serviceType?.registrationType ?? "every service type" }
    var showType: Bool { serviceType == nil }
    var redraws: Bool { !json && !once && Terminal.stdoutIsTTY }

    func run() async throws -> ExitStatus {
        let (updates, sink) = AsyncStream.makeStream(of: Update.self)
        var rows: [String: BrowseRow] = [:]
        var browsedTypes: Set<String> = []
        if let timeout {
            Terminal.status(once ? "browsing \(what) for \(PeerSession.format(timeout))..." : "browsing \(what)...")
        } else if !redraws {
            Terminal.status("browsing \(what) (Ctrl-C to stop)...")
        }
        if redraws { redraw([]) }

        try await withThrowingTaskGroup(of: Void.self) { group in
            defer {
                group.cancelAll()
                sink.finish()
            }
            if let serviceType {
                group.addTask { try await forward(instancesOf: serviceType, into: sink) }
                browsedTypes.insert(serviceType.registrationType)
            } else {
                group.addTask {
                    for await event in ServiceTypeBrowser(interface: interface, logger: logger).events() {
                        sink.yield(.serviceType(event))
                    }
                }
            }
            if let timeout {
                group.addTask {
                    try await Task.sleep(for: timeout)
                    sink.yield(.deadline)
                }
            }
            updateLoop: for await update in updates {
                switch update {
                case .deadline:
                    break updateLoop
                case .serviceType(.unavailable(let message)), .instance(_, .unavailable(let message)):
                    throw CLIError.noDaemon(message)
                case .serviceType(.found(let type)):
                    if json && !once {
                        Terminal.line(JSONText.line(["event": "type-found", "type": type.registrationType]))
                    }
                    guard let chirpType = type.serviceType, browsedTypes.insert(type.registrationType).inserted else {
                        logger.debug("not browsing a service type that is not TCP", metadata: ["type": "\(type)"])
                        continue
                    }
                    group.addTask { try await forward(instancesOf: chirpType, into: sink) }
                case .serviceType(.lost(let type)):
                    if json && !once {
                        Terminal.line(JSONText.line(["event": "type-lost", "type": type.registrationType]))
                    }
                case .instance(let type, .found(let instance)):
                    let row = BrowseRow(type: type, instance: instance)
                    rows[row.key] = row
                    show(row, found: true, rows: rows)
                case .instance(let type, .lost(let name)):
                    guard let row = rows.removeValue(forKey: "\(type)/\(name)") else { continue }
                    show(row, found: false, rows: rows)
                }
            }
        }
        if Task.isCancelled && !redraws && !once { Terminal.clearStatus() }
        guard once else { return .success }
        Terminal.clearStatus()
        guard !Task.isCancelled else { throw CancellationError() }
        if rows.isEmpty {
            let within = "within \(PeerSession.format(timeout ?? .seconds(3)))"
            if serviceType == nil {
                throw CLIError.nothingFound(
                    "no DNS-SD service found on the network \(within) (service-type enumeration returned nothing)",
                    hint:
                        "see Docs/Troubleshooting.md: multicast may be blocked; `avahi-browse -a -t -r` shows what the daemon sees"
                )
            }
            if let serviceType, let name = namedInterface {
                let (problem, hint) = await InterfaceDiagnosis.explain(type: serviceType, interface: name)
                if problem != nil || hint != nil {
                    throw CLIError.nothingFound(
                        "no peer of \(what) found \(within) on \(name)" + (problem.map { ": \($0)" } ?? ""), hint: hint)
                }
            }
            throw CLIError.nothingFound(
                "no peer of \(what) found \(within)",
                hint:
                    "is a peer running, on the same service type? try a longer --timeout, or `chirp browse --once` for every type"
            )
        }
        if json {
            for row in BrowseTable.sorted(Array(rows.values)) { Terminal.line(row.json(event: "found")) }
        } else {
            for line in BrowseTable.render(Array(rows.values), showType: showType) { Terminal.line(line) }
        }
        return .success
    }

    /// Browses one type and forwards its events.
    private func forward(instancesOf type: ServiceType, into sink: AsyncStream<Update>.Continuation) async throws {
        let browser = try ServiceBrowser(serviceType: type.name, interface: interface, logger: logger)
        // The browser's stream ends when this task is cancelled, which stops its DNS-SD browse.
        for await event in browser.events() {
            sink.yield(.instance(type: type.registrationType, event))
        }
    }

    /// Prints one change in the current output mode.
    private func show(_ row: BrowseRow, found: Bool, rows: [String: BrowseRow]) {
        if once { return }
        if json {
            Terminal.line(row.json(event: found ? "found" : "lost"))
        } else if redraws {
            redraw(Array(rows.values))
        } else {
            Terminal.line(row.eventLine(found ? "+" : "-", showType: showType))
            if timeout == nil { Terminal.status("browsing \(what): \(rows.count) found (Ctrl-C to stop)...") }
        }
    }

    /// Clears the terminal and draws the table.
    private func redraw(_ rows: [BrowseRow]) {
        var lines = ["\u{1B}[H\u{1B}[2J" + "chirp browse \(what)  (\(rows.count) found; Ctrl-C to stop)", ""]
        lines += rows.isEmpty ? ["waiting for peers..."] : BrowseTable.render(rows, showType: showType)
        Terminal.raw(lines.joined(separator: "\n") + "\n")
    }
}
