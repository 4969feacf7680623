import ChirpSupport
import ChirpWire
import Logging

/// The peer table: every rule about which peers exist, which connection to keep, and when to dial, as a pure state
/// machine. Events in (``Event``), actions out (``Action``), the time given with each event; no locks, no I/O, no
/// NIO or DNS-SD. ``Engine`` owns one, feeds it what discovery and the connections report, and carries out what it
/// returns. Tests drive it directly (PeerTableTests), a table row per rule.
///
/// `Connection` is whatever identifies a connection to the owner (``PeerConnection`` in the engine, an integer in
/// tests); the table only compares them.
struct PeerTable<Connection: Hashable & Sendable, Instant: InstantProtocol>: Sendable
where Instant.Duration == Duration {
    typealias Entry = PeerEntry<Connection, Instant>

    /// What does not change during a run.
    struct Settings: Sendable {
        /// Our peer id.
        var localID: String
        /// The protocol version we speak (`pv` in TXT records).
        var protocolVersion: String
        /// Whether we hold a shared secret.
        var usesSecret: Bool
        /// Whether we use a device identity (mutual TLS 1.3).
        var usesIdentity = false
        /// Whether tools (peers that only dial) are shown as peers: listed, reported, reached by `.all`.
        var includesTools = false
        /// Higher-id peers leave the first dial to the lower-id peer for this long once we are advertised.
        var dialGrace: Duration = .seconds(1)
        /// How long a removed peer's reappearance, or a connection opened before the peer said it stopped, is suspect.
        var tombstoneLifetime: Duration = .seconds(5)
        /// A connection that lasted less than this counts as a failure for the backoff of the next dial.
        var shortConnection: Duration = .seconds(2)
        /// A connection in use whose peer has sent nothing for this long is presumed dead when a second connection
        /// from that peer arrives that the tie-break would retire: the new one is kept instead. Twice the heartbeat
        /// interval (a live peer sends at least once an interval); the engine sets it from the configuration.
        var presumedDeadAfter: Duration = .seconds(1)
        /// How long a dial waits for the answer of a resolve again after a failure (``PeerEntry/awaitingAnswer``); the
        /// answer usually comes within milliseconds (from the daemon's cache).
        var answerWait: Duration = .seconds(1)
        /// The random factor of each dial backoff (``Backoff/jitter``); tests fix it.
        var dialJitter: @Sendable () -> Double = { Backoff.dial.randomFactor() }
    }

    let settings: Settings
    private(set) var isRunning = true
    /// Our advertisement is in place: peers can have seen us, so lower ids get the dial grace.
    private(set) var isAdvertised = false
    private(set) var entries: [String: Entry] = [:]
    /// The connection in use to each peer: the `slot`s of `entries`, kept apart so that a send looks one up without
    /// copying a whole entry (a send does it every time).
    private var routes: [String: Connection] = [:]
    /// The routes of the peers shown (``isShown(_:)``): what `.all` sends to.
    private var recipientRoutes: [String: Connection] = [:]
    private var instanceOwners: [String: String] = [:]
    /// Peers removed lately. Avahi can report a dead peer's advertisement again for about a second after it was
    /// withdrawn (from its cache); such a peer stays hidden until a dial confirms it is alive.
    private var recentlyGone: [String: Instant] = [:]
    /// When each peer lately said it was stopping. A connection from it opened before then belongs to the run that
    /// stopped (both had dialed, and this one was still in its handshake): it is not used.
    private var stoppedAt: [String: Instant] = [:]
    private var nextGeneration: UInt64 = 0

    init(settings: Settings) {
        self.settings = settings
    }

    var localID: String { settings.localID }

    // MARK: - Queries

    /// The peers users see, sorted by name then id.
    var availablePeers: [Peer] {
        Self.sorted(entries.values.filter(isShown).map(\.snapshot))
    }

    /// Whether users see `entry`: a peer that is visible, and an app (or a tool, with ``Settings/includesTools``).
    private func isShown(_ entry: Entry) -> Bool {
        entry.isVisible && shows(entry.peer.role)
    }

    /// Whether peers of `role` are shown: apps always, tools with ``Settings/includesTools``.
    private func shows(_ role: Peer.Role) -> Bool {
        role == .app || settings.includesTools
    }

    /// The connection in use to `peerID`.
    func connection(to peerID: String) -> Connection? {
        routes[peerID]
    }

    /// Every connection in use, one per peer, tools included.
    var connections: [Connection] {
        Array(routes.values)
    }

    /// The connections in use to the peers users see: what `.all` sends to.
    var recipients: [Connection] {
        Array(recipientRoutes.values)
    }

    /// How many peers users see, and how many of them are connected (for the metrics).
    var counts: (available: Int, connected: Int) {
        (entries.values.reduce(0) { $0 + (isShown($1) ? 1 : 0) }, recipientRoutes.count)
    }

    /// The peer's description, when the table knows it.
    func peer(_ peerID: String) -> Peer? {
        entries[peerID]?.snapshot
    }

    /// Whether the peer advertises itself (discovery resolved one of its instances); `nil` when the table does not
    /// know it. A peer that dialed us before we resolved it is known but not advertised, and forgotten when its
    /// connection closes, though it may dial again.
    func isAdvertised(_ peerID: String) -> Bool? {
        entries[peerID]?.isAdvertised
    }

    static func sorted(_ peers: [Peer]) -> [Peer] {
        peers.sorted { $0.name == $1.name ? $0.id < $1.id : $0.name < $1.name }
    }

    // MARK: - Events

    /// Applies `event` at time `now`; returns what to do, in order.
    mutating func handle(_ event: Event, now: Instant) -> [Action] {
        var actions: [Action] = []
        switch event {
        case .advertised(let advertised):
            isAdvertised = advertised
        case .found(let advert):
            found(advert, now: now, into: &actions)
        case .lost(let instance):
            lost(instance, now: now, into: &actions)
        case .dialDue(let id, let generation):
            dialDue(id, generation: generation, into: &actions)
        case .dialFailed(let id, let failure):
            dialFailed(id, failure, into: &actions)
        case .established(let established):
            self.established(established, now: now, into: &actions)
        case .looked(let connection, let id, let quietFor):
            looked(connection, peerID: id, quietFor: quietFor, now: now, into: &actions)
        case .closed(let connection, let id, let peerStopping, let refusal):
            closed(connection, peerID: id, peerStopping: peerStopping, refusal: refusal, now: now, into: &actions)
        case .stop:
            stop(into: &actions)
        }
        return actions
    }

    private mutating func found(_ advert: Advert, now: Instant, into actions: inout [Action]) {
        let id = advert.peerID
        guard isRunning, !id.isEmpty, id != localID else { return }
        if let version = advert.protocolVersion, version != settings.protocolVersion {
            actions.append(
                .log(
                    .warning, "ignoring a peer that speaks another protocol version",
                    [
                        "instance": "\(UntrustedText.escaped(advert.instanceName))",
                        "version": "\(UntrustedText.escaped(version))",
                        "ours": "\(settings.protocolVersion)"
                    ]))
            return
        }
        let securityMismatch = Self.securityMismatch(advert, settings)
        let wasVisible = entries[id].map(isShown) ?? false
        var entry = entries[id] ?? Entry(peer: Peer(id: id, name: advert.name))
        let advertisedBefore = entry.peer.addresses
        if entries[id] == nil, let gone = recentlyGone[id], gone.duration(to: now) < settings.tombstoneLifetime {
            entry.refused = true  // hidden until a dial succeeds
        }
        entry.peer.name = advert.name
        entry.peer.metadata = advert.metadata
        if entry.slot == nil { entry.peer.fingerprintText = advert.fingerprint?.description }
        entry.peer.host = advert.host
        entry.peer.addresses = advert.addresses
        if let address = advert.dialAddress {
            if let old = entry.dialAddress, old != address { entry.refused = false }
            entry.dialAddress = address
        }
        entry.instances.insert(advert.instanceName)
        entry.stopping = false
        if entry.awaitingAnswer {
            // The answer a dial waited for: the dial scheduled to wait for it is replaced by one without the wait.
            entry.awaitingAnswer = false
            entry.scheduledDial = nil
        }
        if let securityMismatch, entry.securityMismatch == nil {
            actions.append(.log(.warning, "\(UntrustedText.escaped(securityMismatch))", [:]))
            actions.append(
                .emit(
                    .connectionRefused(
                        peer: UntrustedText.escaped(advert.name), reason: UntrustedText.escaped(securityMismatch))))
        }
        entry.securityMismatch = securityMismatch
        instanceOwners[advert.instanceName] = id
        entries[id] = entry
        if !wasVisible && isShown(entry) { actions.append(.emit(.peerAdded(entry.snapshot))) }
        if isShown(entry) { actions.append(peersChanged) }
        if let slot = entry.slot, let remote = slot.peer.addresses.first,
            AddressMove.abandons(remote: remote, advertisedBefore: advertisedBefore, advertisedNow: advert.addresses)
        {
            // The peer no longer has the address this connection goes to (a new address, a lost interface): the
            // connection is dead or soon will be. Closed now; its end redials where the peer is advertised now.
            actions.append(
                .log(
                    .notice, "the peer moved away from the address of its connection; closing it",
                    ["peer": "\(slot.peer)", "now-at": "\(advert.addresses.joined(separator: ", "))"]))
            actions.append(.close(slot.connection))
        }
        scheduleDial(id, into: &actions)
    }

    private mutating func lost(_ instance: String, now: Instant, into actions: inout [Action]) {
        guard let id = instanceOwners.removeValue(forKey: instance), var entry = entries[id] else { return }
        entry.instances.remove(instance)
        if !entry.isAdvertised && entry.slot == nil {
            forget(id, now: now)
            if isShown(entry) {
                actions.append(.emit(.peerRemoved(entry.snapshot)))
                actions.append(peersChanged)
            }
        } else {
            entries[id] = entry
        }
    }

    /// Schedules a dial to `id` if it is advertised, not connected and not being dialed.
    private mutating func scheduleDial(_ id: String, into actions: inout [Action]) {
        guard isRunning, var entry = entries[id], entry.slot == nil, !entry.dialing, entry.scheduledDial == nil,
            entry.isAdvertised, !entry.stopping, entry.dialAddress != nil, entry.securityMismatch == nil
        else { return }
        // The lower id dials first. The higher id dials at once only while nobody can have discovered it yet;
        // otherwise it gives the lower id a head start, then dials too in case that peer cannot see it.
        var delay = entry.backoff(factor: settings.dialJitter())
        if entry.awaitingAnswer { delay = max(delay, settings.answerWait) }
        if Self.dialsFirst(id, localID: localID) && isAdvertised && !entry.refused {
            delay = max(delay, settings.dialGrace)
        }
        nextGeneration += 1
        entry.scheduledDial = nextGeneration
        entries[id] = entry
        actions.append(.scheduleDial(peerID: id, after: delay, generation: nextGeneration))
    }

    /// The dial order, the one rule for it: the peer whose id is lower dials first, and the other waits
    /// ``Settings/dialGrace`` before it dials too. Whether `peerID` dials us (`localID`) first.
    static func dialsFirst(_ peerID: some StringProtocol, localID: some StringProtocol) -> Bool {
        peerID < localID
    }

    /// The dial order (``dialsFirst(_:localID:)``) when only the peer's instance name is known, before its TXT
    /// record is resolved: the name carries the first ``shortIDLength`` characters of its id
    /// (``instanceName(name:id:)``), compared with as many of ours. A peer whose short id is lower dials us first;
    /// one whose short id equals ours, or whose name carries none, is taken for one that does not.
    static func dialsUsFirst(instanceName: String, localID: String) -> Bool {
        guard instanceName.hasSuffix("]"), let open = instanceName.lastIndex(of: "[") else { return false }
        let shortID = instanceName[instanceName.index(after: open)..<instanceName.index(before: instanceName.endIndex)]
        return !shortID.isEmpty && dialsFirst(shortID, localID: localID.prefix(shortIDLength))
    }

    private mutating func dialDue(_ id: String, generation: UInt64, into actions: inout [Action]) {
        guard isRunning, var entry = entries[id], entry.scheduledDial == generation else { return }
        entry.scheduledDial = nil
        defer { entries[id] = entry }
        guard entry.slot == nil, !entry.dialing, let address = entry.dialAddress else { return }
        entry.dialing = true
        actions.append(.dial(peerID: id, address: address, peer: entry.snapshot))
    }

    private mutating func dialFailed(_ id: String, _ failure: DialFailure, into actions: inout [Action]) {
        guard var entry = entries[id] else { return }
        entry.dialing = false
        entry.failures += 1
        switch failure {
        case .refused:
            entry.failures = max(entry.failures, Entry.refusalFailures + 1)
        case .failed(let reason, let connectionRefused):
            if connectionRefused && !entry.refused && entry.slot == nil {
                // Nothing listens where the peer is advertised: a stale advertisement of a process that is gone.
                entry.refused = true
                actions.append(.emit(.peerRemoved(entry.snapshot)))
                entries[id] = entry
                actions.append(peersChanged)
            }
            if let reason {
                actions.append(
                    .log(
                        .debug, "dial failed",
                        [
                            "peer": "\(entry.peer)", "reason": "\(reason)",
                            "retry-in": "\(entry.backoff(factor: 1)) (before jitter)"
                        ]))
            }
        }
        if case .failed(_, connectionRefused: false) = failure {
            // Timed out or unreachable: the address may be stale (the peer moved). Something that refused the
            // connection answered there, so that address still exists.
            resolveAgain(entry, avoiding: entry.dialAddress.map { [$0.host] } ?? [], into: &actions)
            entry.awaitingAnswer = entry.isAdvertised
        }
        entries[id] = entry
        scheduleDial(id, into: &actions)
    }

    /// Asks discovery to resolve `entry`'s instances again (``Action/resolveAgain(_:avoiding:)``), `avoiding` the
    /// addresses that failed (hosts, no port).
    private func resolveAgain(_ entry: Entry, avoiding: [String], into actions: inout [Action]) {
        for instance in entry.instances.sorted() { actions.append(.resolveAgain(instance, avoiding: avoiding)) }
    }

    private mutating func established(_ new: Established, now: Instant, into actions: inout [Action]) {
        let id = new.peer.id
        guard isRunning else {
            actions.append(.retire(new.connection, holding: nil))
            return
        }
        // The peer stopped while this connection was in its handshake (both had dialed): it is not coming back on
        // it, so it is closed without telling anyone the peer connected again.
        if let stopped = stoppedAt[id], new.openedAt < stopped, stopped.duration(to: now) < settings.tombstoneLifetime {
            if new.role == .dialer, var entry = entries[id] {
                entry.dialing = false
                entries[id] = entry
            }
            actions.append(
                .log(.debug, "closing a connection the peer opened before it stopped", ["peer": "\(new.peer)"]))
            actions.append(.close(new.connection))
            return
        }
        let wasVisible = entries[id].map(isShown) ?? false
        var entry = entries[id] ?? Entry(peer: new.peer)
        entry.refused = false
        entry.peer.name = new.peer.name
        entry.peer.metadata = new.peer.metadata
        entry.peer.role = new.peer.role
        if let proven = new.peer.fingerprintText { entry.peer.fingerprintText = proven }
        let shown = shows(new.peer.role)
        if new.role == .dialer { entry.dialing = false }
        entry.stopping = false
        if let existing = entry.slot {
            // Two connections with one peer: keep the one both sides keep, retire the other.
            let keepsNew = TieBreak.keepsNew(
                existingDialer: existing.dialerID, newDialer: new.dialerID, localID: localID, remoteID: id)
            if !keepsNew && entry.challenger == nil
                && existing.inUseSince.duration(to: now) >= settings.presumedDeadAfter
            {
                // The peer dialed again while the connection the rule keeps has been in use for a while: it may have
                // abandoned that one (its address or interface went). The new one waits for a look at the old one.
                entry.challenger = new
                entries[id] = entry
                actions.append(.lookAtQuiet(existing.connection, peerID: id))
                return
            }
            entries[id] = entry
            tieBreak(id, existing: existing, new: new, keepsNew: keepsNew, now: now, into: &actions)
            return
        }
        entry.slot = .init(
            connection: new.connection, dialerID: new.dialerID, peer: new.peer, connectedAt: now, inUseSince: now)
        routes[id] = new.connection
        recipientRoutes[id] = shown ? new.connection : nil
        entry.scheduledDial = nil  // a dial still scheduled finds the peer connected, or a newer generation
        entries[id] = entry
        if entry.instances.isEmpty {
            // It dialed us before we resolved it: discovery need not resolve it while this connection lasts.
            actions.append(.instanceConnected(Self.instanceName(of: new.peer)))
        }
        if shown {
            // A tool (a peer that only dials) is answered, not announced, unless tools are included.
            if !wasVisible { actions.append(.emit(.peerAdded(entry.snapshot))) }
            actions.append(.emit(.peerConnected(entry.snapshot)))
            actions.append(peersChanged)
        }
        actions.append(
            .log(.info, "connected", ["peer": "\(new.peer)", "role": "\(new.role)", "peer-role": "\(new.peer.role)"]))
    }

    /// Keeps one of two connections with peer `id` (the rule of ``TieBreak``) and retires the other.
    private mutating func tieBreak(
        _ id: String, existing: Entry.Slot, new: Established, keepsNew: Bool, now: Instant, into actions: inout [Action]
    ) {
        guard var entry = entries[id] else { return }
        let loser: Connection
        if keepsNew {
            loser = existing.connection
            promote(new, in: &entry, replacing: existing, now: now)
        } else {
            loser = new.connection
        }
        entries[id] = entry
        // Both dialed at once: what the peer sent on the loser comes first. (A second connection from the same
        // dialer replaces a stale one, whose remaining frames are not waited for.)
        let winner = loser == existing.connection ? new.connection : existing.connection
        let holding = existing.dialerID != new.dialerID ? winner : nil
        actions.append(.log(.debug, "two connections to one peer; keeping one", ["peer": "\(new.peer)"]))
        if let holding, holding == new.connection {
            // Our messages move to the new connection. The peer holds what arrives on it only once its table
            // knows both, which may be later than ours: we wait for its goodbye on the loser.
            actions.append(.holdOutbound(holding, until: loser))
        }
        actions.append(.retire(loser, holding: holding))
    }

    /// Makes `new` the connection in use to its peer in place of `existing` (the peer stays connected: no event).
    private mutating func promote(
        _ new: Established, in entry: inout Entry, replacing existing: Entry.Slot, now: Instant
    ) {
        let id = new.peer.id
        entry.slot = .init(
            connection: new.connection, dialerID: new.dialerID, peer: new.peer, connectedAt: existing.connectedAt,
            inUseSince: now)
        routes[id] = new.connection
        recipientRoutes[id] = shows(new.peer.role) ? new.connection : nil
    }

    /// The look at the connection in use that a second connection waited for (``Action/lookAtQuiet(_:peerID:)``):
    /// a peer quiet for ``Settings/presumedDeadAfter`` abandoned it, and the new one is kept; otherwise the tie-break
    /// applies as usual.
    private mutating func looked(
        _ connection: Connection, peerID id: String, quietFor: Duration?, now: Instant, into actions: inout [Action]
    ) {
        guard var entry = entries[id], let challenger = entry.challenger, let existing = entry.slot,
            existing.connection == connection
        else { return }
        entry.challenger = nil
        entries[id] = entry
        guard isRunning else { return }
        let quiet = quietFor ?? .seconds(Int64.max / 2)
        guard quiet >= settings.presumedDeadAfter else {
            tieBreak(id, existing: existing, new: challenger, keepsNew: false, now: now, into: &actions)
            return
        }
        // Nothing from the peer on the old connection for two heartbeat intervals, and a new one from it: it left
        // the old one (its address or interface went). Closed without a goodbye (the peer cannot hear it there).
        promote(challenger, in: &entry, replacing: existing, now: now)
        entries[id] = entry
        actions.append(
            .log(
                .notice, "the connection in use was quiet and the peer dialed again; keeping the new one",
                ["peer": "\(challenger.peer)", "quiet": "\(quiet)"]))
        actions.append(.close(existing.connection))
    }

    private mutating func closed(
        _ connection: Connection, peerID id: String, peerStopping: Bool, refusal: String?, now: Instant,
        into actions: inout [Action]
    ) {
        if var entry = entries[id], let challenger = entry.challenger {
            if challenger.connection == connection {
                // The second connection closed while it waited: nothing to decide.
                entry.challenger = nil
                entries[id] = entry
                return
            }
            if let slot = entry.slot, slot.connection == connection, !peerStopping, refusal == nil {
                // The connection in use ended while a second one waited for a look at it: the second takes over.
                entry.challenger = nil
                promote(challenger, in: &entry, replacing: slot, now: now)
                entries[id] = entry
                actions.append(
                    .log(
                        .info, "the connection in use ended; keeping the peer's new one", ["peer": "\(challenger.peer)"]
                    ))
                return
            }
            if let slot = entry.slot, slot.connection == connection {
                // It ended for good (the peer stops, or refused): so does the one that waited.
                entry.challenger = nil
                entries[id] = entry
                actions.append(.close(challenger.connection))
            }
        }
        guard var entry = entries[id], let slot = entry.slot, slot.connection == connection else { return }
        if entry.instances.isEmpty { actions.append(.instanceDisconnected(Self.instanceName(of: slot.peer))) }
        entry.slot = nil
        routes[id] = nil
        recipientRoutes[id] = nil
        let shown = shows(entry.peer.role)
        let lasted = slot.connectedAt.duration(to: now)
        entry.failures = lasted < settings.shortConnection ? entry.failures + 1 : 0
        if peerStopping {
            entry.stopping = true
            stoppedAt = stoppedAt.filter { $0.value.duration(to: now) < settings.tombstoneLifetime }
            stoppedAt[id] = now
        }
        var peer = entry.snapshot
        peer.isConnected = false
        if let refusal {
            // Refused right after the hellos (the peer's accept policy): a refusal like any other.
            entry.failures = max(entry.failures, Entry.refusalFailures)
            let reason = HandshakeError.refusedByRemote(reason: refusal).description
            actions.append(.log(.warning, "peer \(slot.peer) refused: \(reason)", [:]))
            actions.append(.emit(.connectionRefused(peer: slot.peer.description, reason: reason)))
        }
        if shown { actions.append(.emit(.peerDisconnected(peer))) }
        if entry.isAdvertised {
            // Where the peer is now may not be where it was (Docs/Protocol.md section 6, "A peer that moves"). The
            // address the connection went to failed: an answer of only that one is taken from another interface, and
            // the next dial waits for the answer.
            entry.awaitingAnswer = !peerStopping && refusal == nil
            entries[id] = entry
            if shown { actions.append(peersChanged) }
            if entry.awaitingAnswer {
                let failed = slot.peer.addresses.prefix(1).map(IPAddressText.host(ofEndpoint:))
                resolveAgain(entry, avoiding: failed, into: &actions)
            }
            scheduleDial(id, into: &actions)
        } else {
            forget(id, now: now)
            if shown {
                actions.append(.emit(.peerRemoved(peer)))
                actions.append(peersChanged)
            }
        }
        actions.append(.log(.info, "disconnected", ["peer": "\(slot.peer)"]))
    }

    private mutating func stop(into actions: inout [Action]) {
        guard isRunning else { return }
        isRunning = false
        let stopping = entries.values
        let anyShown = stopping.contains(where: isShown)
        entries = [:]
        routes = [:]
        recipientRoutes = [:]
        instanceOwners = [:]
        for entry in stopping {
            if let challenger = entry.challenger { actions.append(.closeWithGoodbye(challenger.connection)) }
            guard let slot = entry.slot else { continue }
            actions.append(.closeWithGoodbye(slot.connection))
            guard shows(entry.peer.role) else { continue }
            var peer = entry.snapshot
            peer.isConnected = false
            actions.append(.emit(.peerDisconnected(peer)))
        }
        if anyShown { actions.append(.emit(.availablePeersChanged([]))) }
    }

    private mutating func forget(_ id: String, now: Instant) {
        entries[id] = nil
        recentlyGone = recentlyGone.filter { $0.value.duration(to: now) < settings.tombstoneLifetime }
        recentlyGone[id] = now
    }

    private var peersChanged: Action { .emit(.availablePeersChanged(availablePeers)) }

    // MARK: - Names

    /// The DNS-SD instance name of a peer: its display name plus a short id, so that equal names never conflict.
    static func instanceName(of peer: Peer) -> String {
        instanceName(name: peer.name, id: peer.id)
    }

    /// How many characters of a peer's id its instance name carries (``instanceName(name:id:)``).
    static var shortIDLength: Int { 8 }

    /// The DNS-SD instance name: the display name plus a short id, so that equal names never conflict.
    static func instanceName(name: String, id: String) -> String {
        let suffix = " [\(id.prefix(shortIDLength))]"
        var base = name
        while base.utf8.count + suffix.utf8.count > 63 { base.removeLast() }
        return base + suffix
    }
}
