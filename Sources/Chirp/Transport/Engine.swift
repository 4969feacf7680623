import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL

/// One run of a transceiver, from `resume()` to `stop()`: the listener, discovery, the peer table and the dialer.
///
/// Discovery feeds the peer table; the peer table drives the dialer; connections report back through
/// ``ConnectionDelegate``. All mutable state sits behind one lock; events are emitted (in order) while it is held,
/// but user code only ever runs on the ``EventHub``'s queue or in message handlers, never under the lock.
final class Engine: ConnectionDelegate, @unchecked Sendable {
    private struct State {
        var running = true
        var advertised = false
        var listenPort: Int?
        /// The listening sockets: 127.0.0.1 (or 0.0.0.0), and ::1 in loopback-only mode when the host has it.
        var serverChannels: [any Channel] = []
        var discovery: ServiceDiscovery?
        var peers: [String: PeerEntry] = [:]
        var instanceOwners: [String: String] = [:]
        var openChannels: [ObjectIdentifier: any Channel] = [:]
        /// Which messages nobody handles were warned about (once per type name and peer, bounded).
        var unhandledTypes = UnhandledTypeWarnings()
        /// Inbound channels still in their handshake.
        var pendingInbound: Set<ObjectIdentifier> = []
        var warnedPendingLimit = false
        /// Peers removed lately. Avahi can report a dead peer's advertisement again for about a second after it was
        /// withdrawn (from its cache); such a peer stays hidden until a dial confirms it is alive.
        var recentlyGone: [String: NIODeadline] = [:]
        /// When each peer lately said it was stopping (its `goodbye(stopping)` closed our connection). A connection
        /// from that peer opened before then belongs to the run that stopped: its hello was sent before the goodbye.
        var stoppedAt: [String: NIODeadline] = [:]

        mutating func forget(_ id: String) {
            peers[id] = nil
            let now = NIODeadline.now()
            recentlyGone = recentlyGone.filter { now - $0.value < Engine.tombstoneLifetime }
            recentlyGone[id] = now
        }
    }

    /// How long a removed peer's reappearance is treated as suspect.
    static let tombstoneLifetime: TimeAmount = .seconds(5)

    /// Higher-id peers leave the first dial to the lower-id peer for this long once they are advertised.
    static let dialGrace: TimeAmount = .milliseconds(1000)

    let configuration: Configuration
    let serviceType: ServiceType
    let localHello: Hello
    let settings: ConnectionSettings
    private let router: Router
    private let hub: EventHub
    /// Runs async responders, at most `maximumConcurrentResponders` at once; cancelled at `stop()`.
    private let responders: ResponderPool
    private let logger: Logger
    private let group: any EventLoopGroup
    private let state = NIOLockedValueBox(State())

    init(configuration: Configuration, serviceType: ServiceType, router: Router, hub: EventHub) throws {
        let tls: TLSContexts?
        if let secret = configuration.sharedSecret {
            do {
                tls = try TLSContexts(secret: secret, serviceType: serviceType)
            } catch {
                throw ChirpError.invalidConfiguration("could not set up TLS for the shared secret: \(error)")
            }
        } else {
            tls = nil
        }
        self.configuration = configuration
        self.serviceType = serviceType
        self.router = router
        self.hub = hub
        self.responders = ResponderPool(limit: configuration.maximumConcurrentResponders)
        self.logger = configuration.logger
        self.group = configuration.eventLoopGroup
        self.settings = ConnectionSettings(configuration, tls: tls)
        self.localHello = Hello(
            peerID: configuration.peerID, name: configuration.peerName, service: serviceType.name,
            metadata: configuration.metadata)
    }

    var localID: String { configuration.peerID }

    // MARK: - Lifecycle

    /// Opens the listener, then starts advertising and browsing. Completes with the port once listening.
    func start() -> EventLoopFuture<Int> {
        makeServerBootstrap().bind(host: configuration.listenHost, port: configuration.port).flatMap { primary in
            guard let port = primary.localAddress?.port else {
                primary.close(promise: nil)
                return primary.eventLoop.makeFailedFuture(ChirpError.listenFailed("no local port"))
            }
            guard let secondaryHost = self.configuration.secondaryListenHost else {
                return primary.eventLoop.makeCompletedFuture { try self.listening(on: [primary], port: port) }
            }
            // The same port on the second address (::1 for loopback-only); without it, IPv4 is enough.
            return self.makeServerBootstrap().bind(host: secondaryHost, port: port)
                .map { Optional($0) }
                .recover { error in
                    self.logger.debug("not listening on \(secondaryHost); continuing on \(self.configuration.listenHost) only", metadata: [
                        "port": "\(port)", "reason": "\(error)"])
                    return nil
                }
                .flatMapThrowing { secondary in try self.listening(on: [primary] + (secondary.map { [$0] } ?? []), port: port) }
        }.flatMapErrorThrowing { error in
            if let error = error as? ChirpError { throw error }
            throw ChirpError.listenFailed("\(error)")
        }
    }

    /// A listener whose accepted connections get Chirp's pipeline.
    private func makeServerBootstrap() -> ServerBootstrap {
        ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    guard self.track(channel) else { throw ChirpError.notRunning }
                    guard self.admitInbound(channel) else { throw ChirpError.notRunning }
                    try channel.pipeline.syncOperations.addChirpHandlers(
                        role: .acceptor, local: self.localHello, settings: self.settings, delegate: self,
                        dialedPeerID: nil, host: nil, established: nil)
                }
            }
    }

    /// Keeps the listening channels (or closes them when stopped meanwhile), then starts discovery.
    private func listening(on channels: [any Channel], port: Int) throws -> Int {
        let keep = state.withLockedValue { state -> Bool in
            guard state.running else { return false }
            state.serverChannels = channels
            state.listenPort = port
            return true
        }
        guard keep else {
            for channel in channels { channel.close(promise: nil) }
            throw ChirpError.notRunning
        }
        startDiscovery(port: port)
        hub.emit(.started(port: port))
        let addresses = channels.compactMap { $0.localAddress?.ipAddress }.joined(separator: ", ")
        logger.info("listening", metadata: [
            "port": "\(port)", "addresses": "\(addresses)", "service": "\(serviceType.registrationType)",
            "peer": "\(configuration.peerName)"])
        return port
    }

    private func startDiscovery(port: Int) {
        var txt = TXTRecord()
        txt.set(TXTRecord.ReservedKey.peerID, localID)
        txt.set(TXTRecord.ReservedKey.name, configuration.peerName)
        txt.set(TXTRecord.ReservedKey.protocolVersion, String(Hello.currentProtocolVersion))
        if configuration.sharedSecret != nil { txt.set(TXTRecord.ReservedKey.secure, "1") }
        for (key, value) in configuration.metadata.sorted(by: { $0.key < $1.key }) { txt.set(key, value) }
        // Peers that dial us first wait behind the others for their resolve (only when we advertise: else nobody does).
        let localID = self.localID
        let resolveLater: (@Sendable (String) -> Bool)? =
            configuration.advertises ? { @Sendable instance in Engine.dialsUsFirst(instanceName: instance, localID: localID) } : nil
        let discovery = ServiceDiscovery(
            serviceType: serviceType, domain: configuration.domain, interfaceIndex: configuration.interfaceIndex,
            advertisement: configuration.advertises
                ? .init(instanceName: Self.instanceName(name: configuration.peerName, id: localID), port: UInt16(port), txt: txt)
                : nil,
            resolveLater: resolveLater,
            logger: logger
        ) { [weak self] event in self?.handle(event) }
        let started = state.withLockedValue { state -> Bool in
            guard state.running else { return false }
            state.discovery = discovery
            return true
        }
        if started { discovery.start() }
    }

    /// Whether the peer advertised as `instanceName` has a lower id than ours (going by the short id in the name):
    /// that peer dials us first (``scheduleDial(_:state:)``), so resolving its instance can wait behind the others,
    /// and is often not needed at all (``ServiceDiscovery/connected(instanceName:)``).
    static func dialsUsFirst(instanceName: String, localID: String) -> Bool {
        guard instanceName.hasSuffix("]"), let open = instanceName.lastIndex(of: "[") else { return false }
        let shortID = instanceName[instanceName.index(after: open)..<instanceName.index(before: instanceName.endIndex)]
        return !shortID.isEmpty && shortID < localID.prefix(8)
    }

    /// The DNS-SD instance name: the display name plus a short id, so that equal names never conflict.
    static func instanceName(name: String, id: String) -> String {
        let suffix = " [\(id.prefix(8))]"
        var base = name
        while base.utf8.count + suffix.utf8.count > 63 { base.removeLast() }
        return base + suffix
    }

    /// Says goodbye to every peer, closes every socket and DNS-SD reference. Completes when all are released.
    func stop() -> EventLoopFuture<Void> {
        let (servers, discovery, entries, channels) = state.withLockedValue { state in
            state.running = false
            defer {
                state.peers = [:]
                state.instanceOwners = [:]
                state.serverChannels = []
                state.discovery = nil
            }
            return (state.serverChannels, state.discovery, Array(state.peers.values), Array(state.openChannels.values))
        }
        responders.cancelAll()
        let loop = group.any()
        var futures: [EventLoopFuture<Void>] = []
        for entry in entries {
            entry.scheduledDial?.cancel()
            entry.connection?.close(goodbye: GoodbyeReason.stopping)
        }
        for channel in channels {
            futures.append(channel.closeFuture)
            // Connections close after their goodbye is flushed; anything else (handshakes in flight) now.
            if !entries.contains(where: { $0.connection?.channel === channel }) { channel.close(promise: nil) }
            channel.eventLoop.scheduleTask(in: .seconds(2)) { channel.close(promise: nil) }
        }
        for server in servers {
            futures.append(server.close())
        }
        if let discovery {
            let promise = loop.makePromise(of: Void.self)
            discovery.stop { promise.succeed(()) }
            futures.append(promise.futureResult)
        }
        let done = EventLoopFuture.whenAllComplete(futures, on: loop).map { _ in () }
        for entry in entries where entry.connection != nil {
            var peer = entry.snapshot
            peer.isConnected = false
            hub.emit(.peerDisconnected(peer))
        }
        if !entries.isEmpty { hub.emit(.availablePeersChanged([])) }
        return done
    }

    /// Registers a channel so `stop()` can close it; `false` once stopped.
    private func track(_ channel: any Channel) -> Bool {
        let id = ObjectIdentifier(channel)
        let accepted = state.withLockedValue { state -> Bool in
            guard state.running else { return false }
            state.openChannels[id] = channel
            return true
        }
        if accepted {
            channel.closeFuture.whenComplete { _ in
                self.state.withLockedValue { _ = $0.openChannels.removeValue(forKey: id) }
            }
        }
        return accepted
    }

    /// Counts an inbound channel as pending until its handshake ends; `false` (close it) when too many are pending.
    private func admitInbound(_ channel: any Channel) -> Bool {
        let id = ObjectIdentifier(channel)
        let (admitted, warn) = state.withLockedValue { state -> (Bool, Bool) in
            guard state.pendingInbound.count < configuration.maximumPendingHandshakes else {
                defer { state.warnedPendingLimit = true }
                return (false, !state.warnedPendingLimit)
            }
            state.pendingInbound.insert(id)
            return (true, false)
        }
        if warn {
            logger.warning("too many connections in their handshake at once; closing new ones until some finish", metadata: [
                "limit": "\(configuration.maximumPendingHandshakes)"])
        }
        if admitted {
            channel.closeFuture.whenComplete { _ in self.state.withLockedValue { _ = $0.pendingInbound.remove(id) } }
        }
        return admitted
    }

    // MARK: - Peers

    var availablePeers: [Peer] {
        Self.sorted(state.withLockedValue { $0.peers.values.filter(\.isVisible).map(\.snapshot) })
    }

    var connections: [PeerConnection] {
        state.withLockedValue { $0.peers.values.compactMap(\.connection) }
    }

    func connection(to peerID: String) -> PeerConnection? {
        state.withLockedValue { $0.peers[peerID]?.connection }
    }

    var port: Int? { state.withLockedValue { $0.listenPort } }

    private func emitPeersChanged(_ state: State) {
        hub.emit(.availablePeersChanged(Self.sorted(state.peers.values.filter(\.isVisible).map(\.snapshot))))
    }

    private static func sorted(_ peers: [Peer]) -> [Peer] {
        peers.sorted { $0.name == $1.name ? $0.id < $1.id : $0.name < $1.name }
    }

    // MARK: - Discovery

    private func handle(_ event: DiscoveryEvent) {
        switch event {
        case .advertised(let name):
            state.withLockedValue { $0.advertised = true }
            hub.emit(.advertised(instanceName: name))
        case .unavailable(let message):
            state.withLockedValue { $0.advertised = false }
            hub.emit(.discoveryUnavailable(message))
        case .sighted(let name):
            hub.emit(.instanceFound(instanceName: name))
        case .found(let service):
            found(service)
        case .lost(let instance):
            lost(instance)
        }
    }

    private func found(_ service: DiscoveredService) {
        guard let id = service.txt[TXTRecord.ReservedKey.peerID], !id.isEmpty, id != localID else { return }
        if let version = service.txt[TXTRecord.ReservedKey.protocolVersion], version != String(Hello.currentProtocolVersion) {
            logger.warning("ignoring a peer that speaks another protocol version", metadata: [
                "instance": "\(service.instanceName)", "version": "\(version)", "ours": "\(Hello.currentProtocolVersion)"])
            return
        }
        let name = service.txt[TXTRecord.ReservedKey.name] ?? service.instanceName
        let peerUsesSecret = service.txt[TXTRecord.ReservedKey.secure] == "1"
        let securityMismatch: String?
        switch (peerUsesSecret, configuration.sharedSecret != nil) {
        case (true, false): securityMismatch = "\(name) requires a shared secret: set CHIRP_SECRET or use --secret-file"
        case (false, true): securityMismatch = "\(name) does not use a shared secret, and we do: not connecting"
        default: securityMismatch = nil
        }
        var metadata = service.txt.dictionary
        for key in TXTRecord.ReservedKey.all { metadata[key] = nil }
        let address = service.addresses.first { !$0.contains(":") } ?? service.addresses.first
        state.withLockedValue { state in
            guard state.running else { return }
            let wasVisible = state.peers[id]?.isVisible ?? false
            var entry = state.peers[id] ?? PeerEntry(peer: Peer(id: id, name: name))
            if state.peers[id] == nil, let gone = state.recentlyGone[id], NIODeadline.now() - gone < Self.tombstoneLifetime {
                entry.refused = true  // hidden until a dial succeeds
            }
            entry.peer.name = name
            entry.peer.metadata = metadata
            entry.peer.host = service.host
            entry.peer.addresses = service.addresses.map { $0.contains(":") ? "[\($0)]:\(service.port)" : "\($0):\(service.port)" }
            if let address {
                if let old = entry.dialAddress, old.host != address || old.port != Int(service.port) { entry.refused = false }
                entry.dialAddress = (address, Int(service.port))
            }
            entry.instances.insert(service.instanceName)
            entry.stopping = false
            if let securityMismatch, entry.securityMismatch == nil {
                logger.warning("\(securityMismatch)")
                hub.emit(.connectionRefused(peer: name, reason: securityMismatch))
            }
            entry.securityMismatch = securityMismatch
            state.instanceOwners[service.instanceName] = id
            state.peers[id] = entry
            if !wasVisible && entry.isVisible { hub.emit(.peerAdded(entry.snapshot)) }
            if entry.isVisible { emitPeersChanged(state) }
            scheduleDial(id, state: &state)
        }
    }

    private func lost(_ instance: String) {
        state.withLockedValue { state in
            guard let id = state.instanceOwners.removeValue(forKey: instance), var entry = state.peers[id] else { return }
            entry.instances.remove(instance)
            if !entry.isAdvertised && entry.connection == nil {
                entry.scheduledDial?.cancel()
                state.forget(id)
                if entry.isVisible {
                    hub.emit(.peerRemoved(entry.snapshot))
                    emitPeersChanged(state)
                }
            } else {
                state.peers[id] = entry
            }
        }
    }

    // MARK: - Dialing

    /// Schedules a dial to `id` if it is advertised, not connected and not being dialed. Called with the lock held.
    private func scheduleDial(_ id: String, state: inout State) {
        guard state.running, var entry = state.peers[id], entry.connection == nil, !entry.dialing,
              entry.scheduledDial == nil, entry.isAdvertised, !entry.stopping, entry.dialAddress != nil,
              entry.securityMismatch == nil
        else { return }
        // The lower id dials first. The higher id dials at once only while nobody can have discovered it yet;
        // otherwise it gives the lower id a head start, then dials too in case that peer cannot see it.
        var delay = entry.backoff
        if id < localID && state.advertised && !entry.refused { delay = max(delay, Self.dialGrace) }
        let loop = group.next()
        entry.scheduledDial = loop.scheduleTask(in: delay) { [weak self] in self?.dial(id) }
        state.peers[id] = entry
    }

    private func dial(_ id: String) {
        let target: (host: String, port: Int, peer: Peer)? = state.withLockedValue { state in
            guard state.running, var entry = state.peers[id] else { return nil }
            entry.scheduledDial = nil
            guard entry.connection == nil, !entry.dialing, let address = entry.dialAddress else {
                state.peers[id] = entry
                return nil
            }
            entry.dialing = true
            state.peers[id] = entry
            return (address.host, address.port, entry.snapshot)
        }
        guard let target else { return }
        guard let policy = configuration.acceptPolicy else {
            logger.debug("dialing", metadata: ["peer": "\(id.prefix(8))", "address": "\(target.host):\(target.port)"])
            _ = connect(host: target.host, port: target.port, dialedPeerID: id, peerHost: target.peer.host)
            return
        }
        // Ask the accept policy before dialing, with what the advertisement says, so that a peer we would refuse
        // never takes the connection for established (it is asked again once the peer introduced itself).
        let candidate = ConnectionCandidate(peer: target.peer, address: "\(target.host):\(target.port)", isInbound: false)
        let decision = group.next().makePromise(of: Bool.self)
        decision.completeWithTask { await policy(candidate) }
        decision.futureResult.whenSuccess { accepted in
            if accepted {
                self.logger.debug("dialing", metadata: ["peer": "\(id.prefix(8))", "address": "\(target.host):\(target.port)"])
                _ = self.connect(host: target.host, port: target.port, dialedPeerID: id, peerHost: target.peer.host)
            } else {
                let reason = HandshakeError.notAccepted(name: target.peer.name).description
                self.logger.warning("not dialing \(target.peer): \(reason)")
                self.hub.emit(.connectionRefused(peer: target.peer.description, reason: reason))
                self.state.withLockedValue { state in
                    guard var entry = state.peers[id] else { return }
                    entry.failures = max(entry.failures, PeerEntry.refusalFailures)
                    state.peers[id] = entry
                }
                self.dialEnded(id, succeeded: false, reason: nil)
            }
        }
    }

    /// Dials `host:port`; completes with the connection once the handshake is done.
    func connect(host: String, port: Int, dialedPeerID: String?, peerHost: String?) -> EventLoopFuture<PeerConnection> {
        let loop = group.next()
        let established = loop.makePromise(of: PeerConnection.self)
        ClientBootstrap(group: loop)
            .connectTimeout(settings.connectTimeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    guard self.track(channel) else { throw ChirpError.notRunning }
                    try channel.pipeline.syncOperations.addChirpHandlers(
                        role: .dialer, local: self.localHello, settings: self.settings, delegate: self,
                        dialedPeerID: dialedPeerID, host: peerHost, established: established)
                }
            }
            .connect(host: host, port: port)
            .whenFailure { error in
                established.fail(error)
                self.dialEnded(dialedPeerID, succeeded: false, reason: "\(error)", refused: Self.isConnectionRefused(error))
            }
        return established.futureResult
    }

    private func dialEnded(_ id: String?, succeeded: Bool, reason: String?, refused: Bool = false) {
        guard let id else { return }
        state.withLockedValue { state in
            guard var entry = state.peers[id] else { return }
            entry.dialing = false
            if refused && !entry.refused && entry.connection == nil {
                // Nothing listens where the peer is advertised: a stale advertisement of a process that is gone.
                entry.refused = true
                state.peers[id] = entry
                hub.emit(.peerRemoved(entry.snapshot))
                emitPeersChanged(state)
            }
            if !succeeded {
                entry.failures += 1
                if let reason {
                    logger.debug("dial failed", metadata: ["peer": "\(entry.peer)", "reason": "\(reason)", "retry-in": "\(entry.backoff)"])
                }
            }
            state.peers[id] = entry
            scheduleDial(id, state: &state)
        }
    }

    /// Whether a connect error says that nothing listens at that address.
    static func isConnectionRefused(_ error: any Error) -> Bool {
        if let error = error as? IOError { return error.errnoCode == ECONNREFUSED }
        if let error = error as? NIOConnectionError {
            return !error.connectionErrors.isEmpty && error.connectionErrors.allSatisfy { isConnectionRefused($0.error) }
        }
        return false
    }

    // MARK: - ConnectionDelegate

    func connectionEstablished(_ connection: PeerConnection) {
        let id = connection.remote.peerID
        var retire: PeerConnection?
        var hold: (winner: PeerConnection, loser: PeerConnection)?
        var unresolved: ServiceDiscovery?
        var stale = false
        state.withLockedValue { state in
            state.pendingInbound.remove(ObjectIdentifier(connection.channel))
            guard state.running else {
                retire = connection
                return
            }
            // The peer stopped while this connection was in its handshake (both had dialed): it is not coming back
            // on it, so it is closed without telling anyone the peer connected again.
            if let stopped = state.stoppedAt[id], connection.openedAt < stopped, NIODeadline.now() - stopped < Self.tombstoneLifetime {
                stale = true
                if connection.role == .dialer, var entry = state.peers[id] {
                    entry.dialing = false
                    state.peers[id] = entry
                }
                return
            }
            let wasVisible = state.peers[id]?.isVisible ?? false
            var entry = state.peers[id] ?? PeerEntry(peer: connection.peer)
            entry.refused = false
            entry.peer.name = connection.remote.name
            entry.peer.metadata = connection.remote.metadata
            if connection.role == .dialer { entry.dialing = false }
            entry.stopping = false
            if let existing = entry.connection {
                if TieBreak.keepsNew(existing: existing, new: connection, localID: localID) {
                    retire = existing
                    entry.connection = connection
                } else {
                    retire = connection
                }
                // Both dialed at once: what the peer sent on the loser comes first. (A second connection from the
                // same dialer replaces a stale one, whose remaining frames are not waited for.)
                if existing.dialerID != connection.dialerID, let loser = retire {
                    hold = (loser === existing ? connection : existing, loser)
                }
                state.peers[id] = entry
                return
            }
            entry.connection = connection
            entry.connectedAt = .now()
            entry.scheduledDial?.cancel()
            entry.scheduledDial = nil
            if entry.instances.isEmpty { unresolved = state.discovery }  // it dialed us before we resolved it
            state.peers[id] = entry
            if !wasVisible { hub.emit(.peerAdded(entry.snapshot)) }
            hub.emit(.peerConnected(entry.snapshot))
            emitPeersChanged(state)
        }
        if stale {
            logger.debug("closing a connection the peer opened before it stopped", metadata: ["peer": "\(connection.peer)"])
            connection.channel.close(promise: nil)
            return
        }
        unresolved?.connected(instanceName: Self.instanceName(name: connection.remote.name, id: id))
        if let hold { hold.winner.holdInbound(until: hold.loser) }
        if let retire {
            logger.debug("two connections to one peer; keeping one", metadata: ["peer": "\(connection.peer)"])
            retire.retire()
        } else {
            logger.info("connected", metadata: ["peer": "\(connection.peer)", "role": "\(connection.role)"])
        }
    }

    func connectionClosed(_ connection: PeerConnection) {
        let id = connection.remote.peerID
        var unresolved: ServiceDiscovery?
        let disconnected = state.withLockedValue { state -> Bool in
            guard var entry = state.peers[id], entry.connection === connection else { return false }
            if entry.instances.isEmpty { unresolved = state.discovery }
            entry.connection = nil
            let lasted = entry.connectedAt.map { NIODeadline.now() - $0 } ?? .zero
            entry.failures = lasted < .seconds(2) ? entry.failures + 1 : 0
            entry.connectedAt = nil
            if connection.peerIsStopping {
                entry.stopping = true
                let now = NIODeadline.now()
                state.stoppedAt = state.stoppedAt.filter { now - $0.value < Self.tombstoneLifetime }
                state.stoppedAt[id] = now
            }
            var peer = entry.snapshot
            peer.isConnected = false
            if let refusal = connection.refusal {
                // Refused right after the hellos (the peer's accept policy): a refusal like any other.
                entry.failures = max(entry.failures, PeerEntry.refusalFailures)
                let reason = HandshakeError.refusedByRemote(reason: refusal).description
                logger.warning("peer \(connection.peer) refused: \(reason)")
                hub.emit(.connectionRefused(peer: connection.peer.description, reason: reason))
            }
            hub.emit(.peerDisconnected(peer))
            if entry.isAdvertised {
                state.peers[id] = entry
                scheduleDial(id, state: &state)
            } else {
                state.forget(id)
                hub.emit(.peerRemoved(peer))
            }
            emitPeersChanged(state)
            return true
        }
        // If its instance was left unresolved because of this connection, resolve it now.
        unresolved?.disconnected(instanceName: Self.instanceName(name: connection.remote.name, id: id))
        if disconnected { logger.info("disconnected", metadata: ["peer": "\(connection.peer)"]) }
    }

    func handshakeFailed(role: ConnectionRole, remote: String, dialedPeerID: String?, error: (any Error)?) {
        let explained = error.flatMap(explain)
        var refused = false
        if let explained {
            let who = dialedPeerID.flatMap { id in state.withLockedValue { $0.peers[id]?.peer.description } } ?? remote
            switch explained {
            case .connectedToSelf:
                logger.debug("skipped a connection to ourselves", metadata: ["remote": "\(remote)"])
            case .timedOut:
                logger.notice("connection from \(who) dropped: \(explained)")
            default:
                refused = true
                logger.warning("peer \(who) refused: \(explained)")
                hub.emit(.connectionRefused(peer: who, reason: explained.description))
            }
        } else if let error {
            logger.notice("connection from \(remote) dropped before its handshake: \(error)")
        } else {
            logger.debug("connection closed before its handshake", metadata: ["remote": "\(remote)", "role": "\(role)"])
        }
        if role == .dialer {
            if refused, let id = dialedPeerID {
                // A refusal will not change by itself: wait long before asking again.
                state.withLockedValue { state in
                    guard var entry = state.peers[id] else { return }
                    entry.failures = max(entry.failures, PeerEntry.refusalFailures)
                    state.peers[id] = entry
                }
            }
            dialEnded(dialedPeerID, succeeded: false, reason: nil)
        }
    }

    /// Turns a handshake-time error into the reason both sides log.
    private func explain(_ error: any Error) -> HandshakeError? {
        if let error = error as? HandshakeError { return error }
        if let error = error as? FrameDecodingError, error.reason == .tlsRecord { return .remoteRequiresSecret }
        if configuration.sharedSecret != nil, error is NIOSSLError || error is BoringSSLError {
            let text = "\(error)"
            let detail: String
            if text.contains("BAD_RECORD_MAC") || text.contains("BAD_DECRYPT") || text.contains("DECRYPT_ERROR") {
                detail = "the keys differ"
            } else if text.contains("WRONG_VERSION_NUMBER") || text.contains("HTTP_REQUEST") || text.contains("UNEXPECTED_RECORD") {
                detail = "the peer does not speak TLS"
            } else if text.contains("NO_SHARED_CIPHER") || text.contains("HANDSHAKE_FAILURE") {
                detail = "no common cipher or key"
            } else {
                detail = String(text.prefix(200))
            }
            return .secretMismatch(detail: detail)
        }
        return nil
    }

    func route(_ message: MessageBody, from connection: PeerConnection) {
        let handlers = router.handlers(for: MessageTypeName.routed(message.typeName))
        if handlers.isEmpty {
            let peer = connection.peer
            let (warn, isLast) = state.withLockedValue { state in
                (state.unhandledTypes.shouldWarn(typeName: message.typeName, peerID: peer.id), state.unhandledTypes.isFull)
            }
            if warn {
                let lookalikes = UnhandledTypeWarnings.lookalikes(of: message.typeName, among: router.registeredTypeNames())
                logger.warning("\(UnhandledTypeWarnings.message(typeName: message.typeName, peer: peer, lookalikes: lookalikes, isLast: isLast))")
            }
            return
        }
        let delivery = Router.Delivery(peer: connection.peer, connection: ObjectIdentifier(connection), gate: connection.readGate)
        for handler in handlers {
            do {
                try handler.invoke(message, delivery, configuration.coder)
            } catch let error as ChirpError {
                report(error, logLevel: .error)
            } catch {
                report(.handlerFailed(type: message.typeName, peer: connection.peer, reason: "\(error)"), logLevel: .error)
            }
        }
    }

    func handleRequest(_ request: RequestBody, from connection: PeerConnection) {
        let allocator = connection.channel.allocator
        let coder = configuration.coder
        let typeName = request.message.typeName
        connection.owesReply()
        guard let responder = router.responder(for: MessageTypeName.routed(typeName)) else {
            connection.sendReply(PayloadCoding.failureFrame(
                id: request.requestID, status: .noResponder, typeName: typeName,
                message: "no responder for \(typeName)", allocator: allocator))
            return
        }
        let respond: @Sendable (Result<Router.Reply, any Error>) -> Void = { result in
            let frame: ByteBuffer
            switch result {
            case .success(let reply):
                frame = PayloadCoding.responseFrame(id: request.requestID, status: .ok, reply: reply, allocator: allocator)
            case .failure(let error):
                let status: ResponseStatus
                if case ChirpError.decodingFailed = error { status = .undecodable } else { status = .failed }
                let message = (error as? ChirpError).map { "\($0)" } ?? "\(error)"
                frame = PayloadCoding.failureFrame(id: request.requestID, status: status, typeName: typeName, message: message, allocator: allocator)
            }
            connection.sendReply(frame)
        }
        switch responder {
        case .sync(let body):
            respond(Result { try body(request.message, connection.peer, coder, allocator) })
        case .async(let body):
            // Called from an event loop, so the async responder needs a task of its own: the pool runs it, or queues
            // it (and stops reading this peer) while maximumConcurrentResponders run.
            let peer = connection.peer
            responders.submit(ResponderPool.Job(connection: ObjectIdentifier(connection), gate: connection.readGate) {
                do {
                    respond(.success(try await body(request.message, peer, coder, allocator)))
                } catch where Task.isCancelled {
                    // Cancelled by stop(): nothing is sent, the connection is closing and the requester hears that.
                } catch {
                    respond(.failure(error))
                }
            })
        }
    }

    func report(_ error: ChirpError, logLevel: Logger.Level) {
        logger.log(level: logLevel, "\(error)")
        hub.emit(.error(error))
    }
}
