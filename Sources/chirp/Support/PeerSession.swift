import Chirp
import ChirpCommands
import Foundation
import Logging
import NIOConcurrencyHelpers

/// A transceiver that joined a service type for one command run, and the ways that command waits for peers.
///
/// Created by ``PeerSession/run(command:serviceType:options:logger:configure:_:)``, which stops the transceiver (saying
/// goodbye to every peer) however the body ends.
struct PeerSession: Sendable {
    let transceiver: Transceiver
    let serviceType: ServiceType
    let common: CommonOptions
    let join: JoinOptions
    /// Subscribed before `resume()`, so nothing is missed. Iterate it from one task only.
    let events: AsyncStream<TransceiverEvent>

    /// Joins `serviceType` as the peer of `command` (`listen`, `send`, `ping`), runs `body`, then stops the
    /// transceiver. The peer advertises itself as a tool (``ToolRole``), so that other tools looking for an app pass it
    /// over.
    static func run<Result: Sendable>(
        command: String, serviceType: ServiceType, options: PeerCommandOptions, logger: Logger,
        configure: (Transceiver) -> Void = { _ in },
        _ body: (PeerSession) async throws -> Result
    ) async throws -> Result {
        let (common, join) = (options.common, options.join)
        var configuration = Configuration(serviceType: serviceType.name)
        configuration.peerName = join.peerName(command: command)
        // `listen` and `receive-files` serve apps: a peer like any other to them (an app need not include tools to
        // send to one), a tool to the other tools.
        let servesApps = command == "listen" || command == "receive-files"
        configuration.metadata[ToolRole.key] = servesApps ? ToolRole.listener : ToolRole.cli
        configuration.includesTools = true  // chirp sees the other tools, and passes over them (ToolRole)
        configuration.interface = common.chirpInterface
        configuration.logger = logger
        configuration.connectTimeout = min(common.timeout(default: 10), .seconds(10))
        do {
            configuration.security = try join.secret.security()
        } catch {
            throw CLIError.badInput("\(error)")  // checked by validate() already; the file changed since
        }
        let transceiver = Transceiver(configuration: configuration)
        configure(transceiver)
        if join.endpoint == nil { common.warnIfInterfaceIsUnusable() }
        let session = PeerSession(
            transceiver: transceiver, serviceType: serviceType, common: common, join: join,
            events: transceiver.makeEvents())
        try await transceiver.start()
        do {
            let result = try await body(session)
            await transceiver.shutdown()
            return result
        } catch {
            await transceiver.shutdown()
            throw error
        }
    }

    /// `_name._tcp`, as users see it in avahi-browse.
    var typeText: String { serviceType.registrationType }

    /// How long a refused command still waits for another peer to connect before it reports the refusal.
    static let refusalGrace: Duration = .milliseconds(1500)

    /// How long a command that wants an app waits for one once only chirp's own peers (``ToolRole``) have connected,
    /// before it takes one of those; longer (up to ``appWaitLimit``) while an app is discovered but not connected.
    static let appGrace: Duration = .milliseconds(500)
    static let appWaitLimit: Duration = .seconds(3)

    /// The peer to talk to: the one at `--connect`, or the first connected peer that `selector` matches (any peer when
    /// `nil`), waiting up to `timeout`. When the (matching) peers refuse us (a shared secret missing or different, an
    /// accept policy), it fails about ``refusalGrace`` after the first refusal rather than at the timeout.
    ///
    /// Without a selector and `preferringApps`, an app is taken over chirp's own peers and the other tools of the
    /// package (``ToolRole``: a `chirp listen` on the same type answers no request): when only those have connected,
    /// it waits ``appGrace`` for an app (while one is discovered but not connected yet, up to ``appWaitLimit``), then
    /// takes the first of them.
    /// - Throws: ``CLIError`` with ``ExitStatus/nothingFound``, ``ExitStatus/noDaemon``, ``ExitStatus/refused`` or
    ///   ``ExitStatus/peerFailure``.
    func findPeer(_ selector: PeerSelector?, within timeout: Duration, preferringApps: Bool = false) async throws
        -> Peer
    {
        if let endpoint = join.endpoint {
            return try await connect(to: endpoint, within: timeout)
        }
        let wanted = selector.map { "peer '\($0.text)'" } ?? "a peer"
        Terminal.status(
            "waiting up to \(Self.format(timeout)) for \(wanted) of \(typeText) to connect (Ctrl-C to stop)...")
        enum Outcome: Sendable {
            case found(Peer)
            case timedOut, idle
        }
        let refusals = RefusalLog()
        let transceiver = self.transceiver
        let events = self.events
        let typeText = self.typeText
        let (refused, refusedSink) = AsyncStream.makeStream(of: Void.self)
        // Without a selector, with apps preferred: the first tool that connected, handed to the fallback task.
        let wantsApp = selector == nil && preferringApps
        let (tools, toolSink) = AsyncStream.makeStream(of: Peer.self)
        let found: Peer? = try await withThrowingTaskGroup(of: Outcome.self) { group in
            group.addTask {
                let matching = transceiver.connectedPeers.filter { selector?.matches($0) ?? true }
                if let peer = matching.first(where: { !wantsApp || !ToolRole.isTool($0) }) { return .found(peer) }
                if let tool = matching.first { toolSink.yield(tool) }
                for await event in events {
                    switch event {
                    case .peerConnected(let peer) where selector?.matches(peer) ?? true:
                        if wantsApp && ToolRole.isTool(peer) {
                            toolSink.yield(peer)
                            continue
                        }
                        return .found(peer)
                    case .discoveryUnavailable(let message):
                        throw CLIError.noDaemon(message)
                    case .connectionRefused(let peer, let reason):
                        refusals.add(Self.refusalText(peer: peer, reason: reason))
                        if selector?.matches(refusedPeer: peer) ?? true { refusedSink.yield() }
                    default:
                        continue
                    }
                }
                throw CancellationError()
            }
            group.addTask {
                // The first refusal of a wanted peer: give other peers a moment, then report it.
                for await _ in refused {
                    try await Task.sleep(for: Self.refusalGrace)
                    throw CLIError.refused(typeText, reasons: refusals.all)
                }
                return .idle
            }
            group.addTask {
                // Only tools connected: an app gets a moment (more while one is on its way), then the first tool does.
                for await tool in tools {
                    let clock = ContinuousClock()
                    let start = clock.now
                    try await Task.sleep(for: Self.appGrace)
                    while clock.now - start < Self.appWaitLimit,
                        transceiver.availablePeers.contains(where: { !$0.isConnected && !ToolRole.isTool($0) })
                    {
                        try await Task.sleep(for: .milliseconds(50))
                    }
                    // An app that connected meanwhile: the task above may not have read its event yet.
                    let connected = transceiver.connectedPeers.filter { selector?.matches($0) ?? true }
                    if let app = connected.first(where: { !ToolRole.isTool($0) }) { return .found(app) }
                    if transceiver.connectedPeers.contains(tool) { return .found(tool) }  // the tool may have left
                    if let other = transceiver.connectedPeers.first { return .found(other) }
                }
                return .idle
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return .timedOut
            }
            defer {
                group.cancelAll()
                refusedSink.finish()
                toolSink.finish()
            }
            while let outcome = try await group.next() {
                switch outcome {
                case .found(let peer): return peer
                case .timedOut: return nil
                case .idle: continue
                }
            }
            return nil
        }
        Terminal.clearStatus()
        if let found { return found }
        throw await timedOut(selector, timeout: timeout, refusals: refusals.all)
    }

    /// A refusal as chirp prints it: the core's reason, prefixed by the peer unless the reason names it, without the
    /// TLS library's error detail (`--log-level info` shows it).
    static func refusalText(peer: String, reason: String) -> String {
        var reason = reason
        if let detail = reason.range(of: " (TLS handshake failed") { reason = String(reason[..<detail.lowerBound]) }
        return reason.contains(peer) ? reason : "\(peer): \(reason)"
    }

    /// Every connected peer, once the other peers had a moment to be discovered (`minimum`) and those discovered a
    /// moment (up to `grace` in all) to connect too.
    func settledPeers(minimum: Duration = .milliseconds(300), grace: Duration = .seconds(1)) async throws -> [Peer] {
        let clock = ContinuousClock()
        let deadline = clock.now + grace
        try await Task.sleep(for: minimum)
        while clock.now < deadline {
            let available = transceiver.availablePeers
            if !available.isEmpty && available.allSatisfy(\.isConnected) { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        return transceiver.connectedPeers
    }

    private func connect(to endpoint: (host: String, port: Int), within timeout: Duration) async throws -> Peer {
        let address = "\(endpoint.host):\(endpoint.port)"
        Terminal.status("connecting to \(address) (up to \(Self.format(timeout)))...")
        let transceiver = self.transceiver
        do {
            let peer: Peer? = try await withThrowingTaskGroup(of: Peer?.self) { group in
                group.addTask { try await transceiver.connect(host: endpoint.host, port: endpoint.port) }
                group.addTask {
                    try await Task.sleep(for: timeout)
                    return nil
                }
                defer { group.cancelAll() }
                return try await group.next() ?? nil
            }
            Terminal.clearStatus()
            guard let peer else {
                throw CLIError.nothingFound("no \(typeText) peer answered at \(address) within \(Self.format(timeout))")
            }
            return peer
        } catch let error as CLIError {
            throw error
        } catch is CancellationError {
            throw CancellationError()
        } catch let error as ChirpError {
            throw CLIError(error)
        } catch {
            // A refused handshake is reported as an event right after the connect fails.
            let refusal = await first(of: events, within: .milliseconds(500)) { event in
                if case .connectionRefused(let peer, let reason) = event {
                    return Self.refusalText(peer: peer, reason: reason)
                }
                return nil
            }
            if let refusal { throw CLIError.refused(typeText, reasons: [refusal]) }
            let reason: String
            if let error = error as? ChirpError, error.code == .connectionFailed, let why = error.reason {
                reason = why
            } else {
                reason = "\(error)"
            }
            // The core's words for something at that address that is not a Chirp peer (an HTTP server...).
            let notAPeer = reason.hasPrefix("this is not a Chirp peer")
            throw CLIError.nothingFound(
                "could not reach a \(typeText) peer at \(address): \(reason)",
                hint: notAPeer
                    ? "check the port: `chirp browse \(serviceType.name)` shows each peer's address:port"
                    : "check the address (chirp browse shows each peer's address:port) and that no firewall blocks it")
        }
    }

    /// The first value `extract` finds in an event within `timeout`, or `nil`.
    private func first<T: Sendable>(
        of events: AsyncStream<TransceiverEvent>, within timeout: Duration,
        _ extract: @escaping @Sendable (TransceiverEvent) -> T?
    ) async -> T? {
        await withTaskGroup(of: T?.self) { group in
            group.addTask {
                for await event in events { if let value = extract(event) { return value } }
                return nil
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            return await group.next() ?? nil
        }
    }

    private func timedOut(_ selector: PeerSelector?, timeout: Duration, refusals: [String]) async -> CLIError {
        let within = "within \(Self.format(timeout))"
        // With a selector, a refusal of the wanted peer ended the wait earlier: these are other peers'.
        if !refusals.isEmpty && selector == nil { return .refused(typeText, reasons: refusals) }
        let seen = transceiver.availablePeers
        if seen.isEmpty, let name = common.namedInterface {
            // Nothing at all on that interface: say why, if the interface or another one tells.
            let (problem, hint) = await InterfaceDiagnosis.explain(type: serviceType, interface: name)
            if problem != nil || hint != nil {
                let wanted = selector.map { "no peer '\($0.text)'" } ?? "no peer"
                return .nothingFound(
                    "\(wanted) of \(typeText) connected \(within) on \(name)" + (problem.map { ": \($0)" } ?? ""),
                    hint: hint)
            }
        }
        if let selector {
            if let match = seen.first(where: selector.matches) {
                return .nothingFound("found peer '\(match.name)' of \(typeText) but could not connect to it \(within)")
            }
            let names = seen.map(\.name)
            return .nothingFound(
                "no peer '\(selector.text)' of \(typeText) \(within)"
                    + (names.isEmpty ? "" : " (seen: \(names.joined(separator: ", ")))"),
                hint: "`chirp browse \(serviceType.name)` lists the peers and their ids")
        }
        return .nothingFound(
            "no peer of \(typeText) connected \(within)",
            hint: """
                is a peer running? `chirp browse \(serviceType.name)` lists what is advertised. Peers on other hosts \
                need multicast DNS to reach here (see Docs/Troubleshooting.md), or use --connect HOST:PORT
                """)
    }

    /// "3 s", "1.5 s".
    static func format(_ duration: Duration) -> String {
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        return seconds == seconds.rounded() ? "\(Int(seconds)) s" : "\(seconds) s"
    }
}

/// Picks a peer by `--peer`: its name, its full id, or the start of its id (at least 4 characters, as `chirp browse`
/// shows it).
struct PeerSelector: Sendable {
    let text: String

    func matches(_ peer: Peer) -> Bool {
        if peer.name == text || peer.id == text { return true }
        return text.count >= 4 && peer.id.lowercased().hasPrefix(text.lowercased())
    }

    /// Whether a refusal names this peer: the core names a refused peer "NAME" or "NAME (ID8)" (or by its address,
    /// which matches no selector).
    func matches(refusedPeer description: String) -> Bool {
        if description == text || description.hasPrefix(text + " (") { return true }
        guard text.count >= 4, let open = description.lastIndex(of: "("), description.hasSuffix(")") else {
            return false
        }
        let shortID = description[description.index(after: open)..<description.index(before: description.endIndex)]
        return shortID.lowercased().hasPrefix(text.lowercased().prefix(shortID.count))
    }
}

/// Handshake refusals seen while waiting, for the error message.
private final class RefusalLog: Sendable {
    private let entries = NIOLockedValueBox<[String]>([])

    func add(_ entry: String) {
        entries.withLockedValue { entries in
            if entries.count < 5 && !entries.contains(entry) { entries.append(entry) }
        }
    }

    var all: [String] { entries.withLockedValue { $0 } }
}
