import Chirp
import Foundation

/// One call of a ``CommandTransmitter``: a transceiver of its own, the deadline, and the discovery loop.
final class CommandSession: Sendable {
    let transceiver: Transceiver
    let timeout: Duration
    let settleWindow: Duration?
    /// Subscribed before the transceiver starts, so no event is missed.
    private let events: AsyncStream<TransceiverEvent>
    private let clock = ContinuousClock()
    private let deadline: ContinuousClock.Instant

    init(transceiver: Transceiver, timeout: Duration, settleWindow: Duration?) {
        self.transceiver = transceiver
        self.timeout = timeout
        self.settleWindow = settleWindow
        self.events = transceiver.makeEvents()
        self.deadline = ContinuousClock.now + timeout
    }

    var serviceType: String { transceiver.configuration.serviceType }

    func start() async throws {
        try await transceiver.start()
    }

    // MARK: - Finding apps

    /// What discovery saw besides apps, to explain an empty result.
    private struct Notes: Sendable {
        var unavailable: String?
        var refused: [String] = []

        mutating func note(_ event: TransceiverEvent) {
            switch event {
            case .discoveryUnavailable(let message): unavailable = message
            case .advertised, .instanceFound, .peerAdded: unavailable = nil
            case .connectionRefused(let peer, let reason):
                let message = Refusal(peer: peer, reason: reason).message(for: nil)
                if !refused.contains(message) { refused.append(message) }
            default: break
            }
        }
    }

    private struct Discovery: Sendable {
        var decision: AppFinder.Decision?
        var finder: AppFinder
        var outcomes: [CommandOutcome]
        var notes: Notes
    }

    private enum Signal: Sendable {
        case event(TransceiverEvent)
        case wake
        case reply(CommandOutcome)
    }

    /// The one app `target` designates.
    func find(_ target: AppFinder.Target) async throws(CommandError) -> Peer {
        let discovery = await discover(target, send: nil)
        switch discovery.decision {
        case .chosen(let app):
            return app
        case .several(let apps):
            if case .named(let text) = target {
                throw .ambiguousPeer(service: serviceType, peer: text, apps: apps.map(\.identifiedLabel))
            }
            throw .severalApps(service: serviceType, apps: apps.map(\.identifiedLabel))
        case .refused(let refusals):
            throw refused(refusals, finder: discovery.finder)
        default:
            throw noApp(discovery, target: target)
        }
    }

    /// The error for apps that refused this CLI, each reason naming the app when it is known.
    private func refused(_ refusals: [Refusal], finder: AppFinder) -> CommandError {
        var reasons: [String] = []
        for refusal in refusals {
            let app = finder.discovered.values.first { refusal.concerns($0) }
            let message = refusal.message(for: app)
            if !reasons.contains(message) { reasons.append(message) }
        }
        return .refused(service: serviceType, reasons: reasons)
    }

    /// Sends `command` to every app found; returns the outcomes sorted by app name.
    func broadcast<C: ChirpCommand>(_ command: C) async throws(CommandError) -> [CommandOutcome] {
        let discovery = await discover(.every) { app in
            CommandOutcome(app: app, result: await self.exchange(command, with: app))
        }
        var outcomes = discovery.outcomes
        // Apps discovered but never reached count as failures too: the exit code says whether *all* succeeded.
        for app in discovery.finder.unconnected where !outcomes.contains(where: { $0.app == app }) {
            let error: CommandError
            if let refusal = discovery.finder.refusal(of: app) {
                error = .refused(service: serviceType, reasons: [refusal.message(for: app)], peer: app)
            } else {
                error = .connectionLost(app: app.commandLabel, peer: app)
            }
            outcomes.append(CommandOutcome(app: app, result: .failure(error)))
        }
        if outcomes.isEmpty, case .refused(let refusals) = discovery.decision {
            throw refused(refusals, finder: discovery.finder)
        }
        guard !outcomes.isEmpty else { throw noApp(discovery, target: .every) }
        return outcomes.sorted { $0.app.name == $1.app.name ? $0.app.id < $1.app.id : $0.app.name < $1.app.name }
    }

    private func noApp(_ discovery: Discovery, target: AppFinder.Target) -> CommandError {
        if let message = discovery.notes.unavailable { return .noDaemon(detail: message) }
        var details: [String] = []
        let unconnected = discovery.finder.unconnected
        if !unconnected.isEmpty {
            details.append("found but could not connect to: " + unconnected.map(\.commandLabel).joined(separator: ", "))
        }
        if case .named = target {
            let others = discovery.finder.connected.map(\.identifiedLabel)
            if !others.isEmpty { details.append("apps seen: " + others.joined(separator: ", ")) }
        }
        details += discovery.notes.refused
        var peer: String?
        if case .named(let name) = target { peer = name }
        return .noApp(
            service: serviceType, peer: peer, seconds: timeout.seconds,
            detail: details.isEmpty ? nil : details.joined(separator: "; "))
    }

    /// Feeds the transceiver's events to an ``AppFinder`` until it decides or time is up. With `send`, each app is
    /// sent the command as soon as it connects, and the loop also waits for the replies.
    private func discover(
        _ target: AppFinder.Target, send: (@Sendable (Peer) async -> CommandOutcome)?
    ) async -> Discovery {
        let (signals, continuation) = AsyncStream.makeStream(of: Signal.self)
        let events = self.events
        let deadline = self.deadline
        let clock = self.clock
        let startedAt = clock.now
        return await withTaskGroup(of: Void.self, returning: Discovery.self) { group in
            group.addTask {
                for await event in events { continuation.yield(.event(event)) }
            }
            group.addTask {
                try? await Task.sleep(until: deadline, clock: .continuous)
                continuation.yield(.wake)
            }
            var finder = AppFinder(target: target, startedAt: startedAt, fixedWindow: settleWindow)
            var notes = Notes()
            var outcomes: [CommandOutcome] = []
            var pending = 0
            var sent: Set<String> = []
            var wakeAt: ContinuousClock.Instant?
            var decision: AppFinder.Decision?

            loop: for await signal in signals {
                switch signal {
                case .event(let event):
                    notes.note(event)
                    // No DNS-SD daemon: no app can be found, so say so at once rather than at the timeout.
                    if case .discoveryUnavailable = event, finder.connected.isEmpty, pending == 0 { break loop }
                    let connected = finder.observe(event, at: clock.now)
                    if let send, clock.now < deadline {
                        for app in connected where sent.insert(app.id).inserted {
                            pending += 1
                            group.addTask { continuation.yield(.reply(await send(app))) }
                        }
                    }
                case .reply(let outcome):
                    pending -= 1
                    outcomes.append(outcome)
                case .wake:
                    break
                }
                let now = clock.now
                if now >= deadline {
                    // Replies in flight end by themselves at the deadline (their timeout); wait for them.
                    if pending > 0 { continue }
                    decision = finder.finalDecision()
                    break loop
                }
                switch finder.decision(at: now, pendingReplies: pending) {
                case .wait(let until):
                    if let until, until != wakeAt {
                        wakeAt = until
                        group.addTask {
                            try? await Task.sleep(until: until, clock: .continuous)
                            continuation.yield(.wake)
                        }
                    }
                case let final:
                    decision = final
                    break loop
                }
            }
            group.cancelAll()
            continuation.finish()
            transceiver.configuration.logger.debug(
                "discovery done",
                metadata: [
                    "after": "\(clock.now - startedAt)", "settle-window": "\(finder.window)",
                    "apps": "\(finder.connected.map(\.commandLabel))",
                    "decision": "\(decision.map { "\($0)" } ?? "none")"
                ])
            return Discovery(decision: decision, finder: finder, outcomes: outcomes, notes: notes)
        }
    }

    // MARK: - Sending

    /// Sends `command` to `app` and waits for its reply until the deadline.
    func exchange<C: ChirpCommand>(_ command: C, with app: Peer) async -> Result<CommandResponse, CommandError> {
        let remaining = max(deadline - clock.now, .milliseconds(1))
        let bytes: Data
        do {
            bytes = try await transceiver.request(command, to: app, as: Data.self, timeout: remaining)
        } catch let error as ChirpError {
            switch error.code {
            case .peerDisconnected, .peerNotConnected:
                // The reason says whether the command was sent again, and whether the app may have run it.
                return .failure(.connectionLost(app: app.commandLabel, peer: app, detail: error.reason))
            case .requestTimedOut:
                return .failure(.noReply(app: app.commandLabel, seconds: timeout.seconds, peer: app))
            case .remoteFailure:
                return .success(.failure(error.reason ?? ""))
            case .noResponder:
                let type = error.messageType ?? String(reflecting: C.self)
                return .success(.failure("\(app.name) does not handle \(type) commands (an older version of the app?)"))
            default:
                return .failure(.local(error.description, cause: error))
            }
        } catch {
            return .failure(.local("\(error)", cause: error))
        }
        if let reason = CommandResponse.deniedMessage(in: bytes) {
            return .failure(.notPermitted(app: app.commandLabel, reason: reason, peer: app))
        }
        do {
            return .success(try CommandResponse(encoded: bytes))
        } catch {
            return .failure(
                .local("the reply from \(app.commandLabel) is not a command response: \(error)", cause: error))
        }
    }
}

extension Duration {
    /// As fractional seconds.
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
