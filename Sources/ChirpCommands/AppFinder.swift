import Chirp

/// Decides, from the transceiver's events, which app(s) a command goes to. A pure value: it is fed events and the
/// time, and says what to do next, so the policy is testable without a network.
///
/// The policy, and its trade-off:
/// - `--peer ID` (the app's full peer id): that app, as soon as it connects.
/// - `--peer NAME` (or the first 4 or more characters of the id): the apps it designates are found as below; one is
///   chosen, several (two apps of one name) are reported as ambiguous (exit code 4), with their ids.
/// - neither: the first app to connect, once no other app can be coming; if several apps connected, none is chosen
///   (exit code 4). The DNS-SD daemon answers a browse from its cache in one burst, so the apps it already knows are
///   all reported (``TransceiverEvent/instanceFound(instanceName:)``) within a millisecond or so of each other. Once
///   the burst has been quiet for ``burstQuiet`` and every instance reported has become a peer that connected (or
///   refused), the decision is made at once: with one app running, that is the moment it connects.
///   Otherwise (an instance that does not resolve, a stale advertisement) the **settle window** decides: the first
///   app to connect once the window has passed since the first app was discovered. The window is adaptive: as long
///   as the first discovery took (at least 30 ms, at most 1 s), so it widens on its own on a slow, loaded machine;
///   a fixed window can be set instead, which also turns the early decision off. An app the daemon does not know yet
///   (a host whose announcements it missed) takes a multicast round trip longer and can be missed either way.
/// - `--all`: every app that connects, until discovery has been quiet for the settle window (at least 0.5 s) and
///   every reply is in.
/// In every mode, an app discovered but not yet connected when the window closes is waited for up to 1 s more.
///
struct AppFinder {
    /// Which apps a command goes to.
    enum Target: Sendable, Equatable {
        /// The only app of the service.
        case only
        /// The app `--peer` designates: its name, its full peer id, or the start of its id (4 characters or more).
        case named(String)
        /// Every app of the service.
        case every

        /// Whether `peer` is one of the apps this target designates.
        func matches(_ peer: Peer) -> Bool {
            guard case .named(let text) = self else { return true }
            return Self.peer(peer, matches: text)
        }

        /// `--peer TEXT` designates a peer by its name, its full id, or the start of its id (at least 4 characters,
        /// case-insensitive), as `chirp --peer` does.
        static func peer(_ peer: Peer, matches text: String) -> Bool {
            if peer.name == text || peer.id == text { return true }
            return text.count >= 4 && peer.id.lowercased().hasPrefix(text.lowercased())
        }
    }

    /// What to do next.
    enum Decision: Equatable {
        /// Wait for more events, or until this instant (then ask again).
        case wait(until: ContinuousClock.Instant?)
        /// Send the command to this app.
        case chosen(Peer)
        /// Several apps answered and none was named, or the name given designates several.
        case several([Peer])
        /// `--all`: discovery is over and every reply is in.
        case collected
        /// Every app found refused this CLI (missing or wrong shared secret, accept policy).
        case refused([Refusal])
    }

    /// Metadata that marks a peer that advertises itself as a command-line tool rather than an app (``ToolRole``).
    static let roleKey = "chirp-role"
    static let cliRole = "cli"
    static let listenerRole = "listener"

    static let minimumWindow: Duration = .milliseconds(30)
    static let maximumWindow: Duration = .seconds(1)
    static let minimumWindowForAll: Duration = .milliseconds(500)
    static let connectGrace: Duration = .seconds(1)
    /// How long the daemon's burst of cached instances must have been quiet before it is taken as complete.
    static let burstQuiet: Duration = .milliseconds(5)

    let target: Target
    let startedAt: ContinuousClock.Instant
    /// A fixed settle window instead of the adaptive one.
    let fixedWindow: Duration?

    private(set) var discovered: [String: Peer] = [:]
    /// Connected apps, in the order they connected.
    private(set) var connected: [Peer] = []
    private var firstSeenAt: ContinuousClock.Instant?
    private var lastSeenAt: ContinuousClock.Instant?
    /// Refusals reported so far, oldest first, without repeats.
    private(set) var refusals: [Refusal] = []
    /// Peers seen that are CLIs, not apps: their refusals do not count.
    private var tools: [Peer] = []
    /// Instance names the daemon reported, resolved or not.
    private var sighted: Set<String> = []
    private var lastSightedAt: ContinuousClock.Instant?

    init(target: Target, startedAt: ContinuousClock.Instant, fixedWindow: Duration? = nil) {
        self.target = target
        self.startedAt = startedAt
        self.fixedWindow = fixedWindow
    }

    static func isApp(_ peer: Peer) -> Bool {
        guard peer.role == .app, let role = peer.metadata[roleKey] else { return peer.role == .app }
        return role != cliRole && role != listenerRole
    }

    /// Takes in one event. Returns the apps that just connected.
    @discardableResult
    mutating func observe(_ event: TransceiverEvent, at now: ContinuousClock.Instant) -> [Peer] {
        switch event {
        case .instanceFound(let name):
            if sighted.insert(name).inserted { lastSightedAt = now }
        case .peerAdded(let peer) where Self.isApp(peer):
            if discovered.updateValue(peer, forKey: peer.id) == nil { seen(peer, at: now) }
        case .peerConnected(let peer) where Self.isApp(peer):
            if discovered.updateValue(peer, forKey: peer.id) == nil { seen(peer, at: now) }
            guard !connected.contains(peer) else { return [] }
            connected.append(peer)
            return [peer]
        case .peerDisconnected(let peer) where target != .every:
            // With --all, an app that connected once keeps counting: its request reports what became of it.
            connected.removeAll { $0 == peer }
        case .peerRemoved(let peer):
            discovered[peer.id] = nil
            if target != .every { connected.removeAll { $0 == peer } }
        case .peerAdded(let peer), .peerConnected(let peer):
            if !tools.contains(peer) { tools.append(peer) }  // not an app: the cases above took those
        case .connectionRefused(let peer, let reason):
            let refusal = Refusal(peer: peer, reason: reason)
            if !refusals.contains(refusal) { refusals.append(refusal) }
        default:
            break
        }
        return []
    }

    /// Notes when an app the target designates was discovered (the others do not open the settle window).
    private mutating func seen(_ peer: Peer, at now: ContinuousClock.Instant) {
        guard target.matches(peer) else { return }
        if firstSeenAt == nil { firstSeenAt = now }
        lastSeenAt = now
    }

    /// The settle window: fixed, or as long as the first discovery took, within bounds.
    var window: Duration {
        if let fixedWindow { return fixedWindow }
        let firstDiscovery = (firstSeenAt ?? startedAt) - startedAt
        var window = min(max(firstDiscovery, Self.minimumWindow), Self.maximumWindow)
        if target == .every { window = max(window, Self.minimumWindowForAll) }
        return window
    }

    /// When the daemon's burst of cached instances counts as complete.
    private var burstEnd: ContinuousClock.Instant? { lastSightedAt.map { $0 + Self.burstQuiet } }

    /// Whether no other app can be coming before the settle window closes: the burst is over, every instance it
    /// reported became a peer, and every app found (that the target designates) has connected or refused. Only
    /// without a fixed window.
    func isSettledEarly(at now: ContinuousClock.Instant) -> Bool {
        guard fixedWindow == nil, target != .every, let burstEnd, now >= burstEnd else { return false }
        guard discovered.count + tools.count >= sighted.count, stillComing.isEmpty else { return false }
        return !candidates.isEmpty || !appRefusals.isEmpty
    }

    /// When the settle window closes, once an app (that the target designates) was seen.
    var windowEnd: ContinuousClock.Instant? {
        switch target {
        case .only, .named: return firstSeenAt.map { $0 + window }
        case .every: return lastSeenAt.map { $0 + window }
        }
    }

    /// The connected apps the target designates, in the order they connected.
    var candidates: [Peer] { connected.filter(target.matches) }

    /// Discovered apps that have not connected (yet).
    var unconnected: [Peer] {
        discovered.values.filter { !connected.contains($0) }.sorted { $0.name < $1.name }
    }

    /// The refusal that concerns `app`, if it refused this CLI.
    func refusal(of app: Peer) -> Refusal? {
        refusals.last { $0.concerns(app) }
    }

    /// Refusals by peers that are not known CLIs: the apps found that refused, and those reported by address.
    var appRefusals: [Refusal] {
        refusals.filter { refusal in !tools.contains { refusal.concerns($0) } }
    }

    /// Discovered apps (that the target designates) not connected that may still connect: they have not refused.
    private var stillComing: [Peer] {
        unconnected.filter { target.matches($0) && refusal(of: $0) == nil }
    }

    /// `.refused` when no app connected and the apps found all refused (after the grace second: any refusal).
    private func refusedDecision(pastGrace: Bool) -> Decision? {
        guard connected.isEmpty, !appRefusals.isEmpty else { return nil }
        let refusedApps = unconnected.filter { refusal(of: $0) != nil }
        if !refusedApps.isEmpty && stillComing.isEmpty { return .refused(refusedApps.compactMap(refusal(of:))) }
        return pastGrace ? .refused(appRefusals) : nil
    }

    /// What to do at `now`; `pendingReplies` counts the `--all` requests still in flight.
    func decision(at now: ContinuousClock.Instant, pendingReplies: Int = 0) -> Decision {
        if case .named(let text) = target {
            // A full id designates one app: no other can be coming.
            if let app = connected.first(where: { $0.id == text }) { return .chosen(app) }
            if candidates.isEmpty {
                let named = discovered.values.filter(target.matches)
                let refused = named.compactMap(refusal(of:))
                if !named.isEmpty && refused.count == named.count { return .refused(refused) }
                return .wait(until: nil)
            }
        }
        guard let windowEnd else { return .wait(until: nil) }
        if now < windowEnd && !isSettledEarly(at: now) {
            if let burstEnd, now < burstEnd, burstEnd < windowEnd { return .wait(until: burstEnd) }
            return .wait(until: windowEnd)
        }
        let graceEnd = windowEnd + Self.connectGrace
        if !stillComing.isEmpty && now < graceEnd { return .wait(until: graceEnd) }
        if let refused = refusedDecision(pastGrace: now >= graceEnd) { return refused }
        if connected.isEmpty && !appRefusals.isEmpty && now < graceEnd { return .wait(until: graceEnd) }
        if target == .every {
            return pendingReplies == 0 && !connected.isEmpty ? .collected : .wait(until: nil)
        }
        let candidates = self.candidates
        switch candidates.count {
        case 0: return .wait(until: nil)
        case 1: return .chosen(candidates[0])
        default: return .several(Self.sorted(candidates))
        }
    }

    /// By name, then id.
    static func sorted(_ apps: [Peer]) -> [Peer] {
        apps.sorted { $0.name == $1.name ? $0.id < $1.id : $0.name < $1.name }
    }
}

extension AppFinder {
    /// The decision when time is up: whatever can still be decided from the apps connected now.
    func finalDecision() -> Decision? {
        switch target {
        case .named(let text):
            if let app = connected.first(where: { $0.id == text }) { return .chosen(app) }
            switch candidates.count {
            case 0:
                let refused = discovered.values.filter(target.matches).compactMap(refusal(of:))
                return refused.isEmpty ? nil : .refused(refused)
            case 1: return .chosen(candidates[0])
            default: return .several(Self.sorted(candidates))
            }
        case .only:
            switch connected.count {
            case 0: return appRefusals.isEmpty ? nil : .refused(appRefusals)
            case 1: return .chosen(connected[0])
            default: return .several(Self.sorted(connected))
            }
        case .every:
            if connected.isEmpty { return appRefusals.isEmpty ? nil : .refused(appRefusals) }
            return .collected
        }
    }
}
