import ChirpDiscovery
import ChirpSupport
import ChirpTrust
import ChirpWire
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// One run of a transceiver, from `start()` to `shutdown()`: the wiring of the listener, discovery, the dialer and the
/// ``PeerTable``.
///
/// It holds no rules of its own. Discovery and the connections report to it; it turns each report into an event
/// for the peer table and carries out the actions the table returns: schedule or start a dial, retire or close a
/// connection, tell discovery, emit events, log. Messages and requests on established connections go to the
/// ``MessageDispatcher``, not through here.
final class Engine: ConnectionDelegate {
    typealias Table = PeerTable<PeerConnection, ContinuousClock.Instant>

    private struct State {
        var table: Table
        var listenPort: Int?
        /// The listening sockets: 0.0.0.0 and :: (127.0.0.1 and ::1 in loopback-only mode), each when the host has it.
        var serverChannels: [any Channel] = []
        var discovery: ServiceDiscovery?
        var openChannels: [ObjectIdentifier: any Channel] = [:]
        /// Inbound channels still in their handshake.
        var pendingInbound: Set<ObjectIdentifier> = []
        var warnedPendingLimit = false
        /// Dials the table scheduled, cancelled at stop.
        var dialTimers = DialTimers<Scheduled<Void>>()
        /// Looks at the trust file for changes (device-identity mode, trusted peers), cancelled at stop.
        var trustWatch: RepeatedTask?
        /// Lets pairing requests through one at a time, so many a minute (with a pairing policy).
        var pairingGate: PairingGate<ContinuousClock.Instant>?
    }

    let configuration: Configuration
    let serviceType: ServiceType
    let localHello: Hello
    /// How connections are protected: the TLS contexts made from ``Configuration/security``, the trust keeper.
    let security: TransportSecurity
    let dispatcher: MessageDispatcher
    /// This run's swift-metrics (Docs/Metrics.md).
    let metrics: TransceiverMetrics
    private let hub: EventHub
    private let logger: Logger
    private let group: any EventLoopGroup
    private let state: NIOLockedValueBox<State>
    /// How an acceptor answers pairing requests; nil without a pairing policy.
    private var pairingDoor: PairingDoor? {
        guard let policy = configuration.pairing, let keeper = security.keeper,
            let identity = configuration.deviceIdentity
        else { return nil }
        return PairingDoor(
            policy: policy, keeper: keeper, own: identity.fingerprint, logger: logger,
            admit: { [weak self] in
                guard let self else { return .busy }
                return self.state.withLockedValue { $0.pairingGate?.request(at: .now) }
            },
            release: { [weak self] in self?.state.withLockedValue { $0.pairingGate?.finished() } })
    }

    init(configuration: Configuration, serviceType: ServiceType, router: Router, hub: EventHub) throws {
        switch configuration.security {
        case .none:
            security = .none
        case .sharedSecret(let secret):
            do {
                security = .sharedSecret(try TLSContexts(secret: secret, serviceType: serviceType))
            } catch {
                throw ChirpError.invalidConfiguration(
                    "could not set up TLS for the shared secret: \(error)", cause: error)
            }
        case .identity(let identity, let trust):
            let keeper = try TrustKeeper(identity: identity, trust: trust, logger: configuration.logger)
            do {
                security = .identity(try IdentityTLSContexts(identity: identity), keeper)
            } catch {
                throw ChirpError.invalidConfiguration(
                    "could not set up TLS for the device identity in \(identity.directory): \(error)", cause: error)
            }
        }
        self.configuration = configuration
        self.serviceType = serviceType
        self.hub = hub
        let metrics = TransceiverMetrics(serviceType: serviceType.name, factory: configuration.metricsFactory)
        self.metrics = metrics
        self.dispatcher = MessageDispatcher(router: router, configuration: configuration, hub: hub, metrics: metrics)
        configuration.discoveryBackend.prepare()  // the daemon connection, while the listener opens
        self.logger = configuration.logger
        self.group = configuration.eventLoopGroup
        self.localHello = Hello(
            peerID: configuration.peerID, name: configuration.peerName, service: serviceType.name,
            metadata: configuration.metadata, role: configuration.advertises ? nil : Hello.toolRole,
            features: Hello.currentFeatures)
        self.state = NIOLockedValueBox(
            State(
                table: Table(
                    settings: .init(
                        localID: configuration.peerID, protocolVersion: String(Hello.currentProtocolVersion),
                        usesSecret: configuration.sharedSecret != nil,
                        usesIdentity: configuration.deviceIdentity != nil,
                        includesTools: configuration.includesTools,
                        presumedDeadAfter: configuration.heartbeatInterval * 2)),
                pairingGate: configuration.pairing.map { PairingGate(limit: $0.maximumRequestsPerMinute) }))
    }

    var localID: String { configuration.peerID }

    // MARK: - The peer table

    /// Feeds `event` to the peer table and carries out what it returns.
    ///
    /// Events for users are handed to the ``EventHub`` while the lock is held, so that they reach users in the
    /// table's order whatever thread reported what (`emit` only enqueues; no user code runs there). Everything else
    /// (logging, dialing, closing) happens after the lock is released.
    @discardableResult
    private func apply(_ event: Table.Event) -> [Table.Action] {
        let actions = state.withLockedValue { state -> [Table.Action] in
            let actions = state.table.handle(event, now: .now)
            var membershipChanged = false
            for case .emit(let event) in actions {
                hub.emit(event)
                switch event {
                case .peerConnected:
                    metrics.connects.increment()
                    membershipChanged = true
                case .peerDisconnected, .peerAdded, .peerRemoved: membershipChanged = true
                default: break
                }
            }
            if membershipChanged {
                let counts = state.table.counts
                metrics.peersAvailable.record(counts.available)
                metrics.peersConnected.record(counts.connected)
            }
            return actions
        }
        for action in actions { perform(action) }
        return actions
    }

    private func perform(_ action: Table.Action) {
        switch action {
        case .emit:
            break  // emitted in order under the lock (apply)
        case .log(let level, let message, let metadata):
            logger.log(level: level, message, metadata: metadata)
        case .scheduleDial(let id, let delay, let generation):
            let timer = group.next().scheduleTask(in: delay.timeAmount) { [weak self] () -> Void in
                self?.apply(.dialDue(peerID: id, generation: generation))
            }
            let stale = state.withLockedValue { state -> Scheduled<Void>? in
                guard state.table.isRunning else { return timer }
                return state.dialTimers.keep(timer, generation: generation, for: id)
            }
            stale?.cancel()
        case .dial(let id, let address, let peer):
            dial(id, address: address, peer: peer)
        case .holdOutbound(let winner, let loser):
            winner.holdOutbound(until: loser)
        case .retire(let loser, let holding):
            holding?.holdInbound(until: loser)
            loser.retire()
        case .lookAtQuiet(let connection, let id):
            // On the connection's event loop, where its heartbeat keeps the time of the last frame.
            connection.eventLoop.execute {
                let heartbeat = try? connection.channel.pipeline.syncOperations.handler(type: HeartbeatHandler.self)
                let quiet = heartbeat.map { Duration.nanoseconds($0.peerQuietFor.nanoseconds) } ?? .zero
                self.apply(.looked(connection, peerID: id, quietFor: connection.channel.isActive ? quiet : nil))
            }
        case .close(let connection):
            connection.channel.close(promise: nil)
        case .closeWithGoodbye(let connection):
            connection.close(goodbye: GoodbyeReason.stopping)
        case .instanceConnected(let instance):
            state.withLockedValue { $0.discovery }?.connected(instanceName: instance)
        case .instanceDisconnected(let instance):
            state.withLockedValue { $0.discovery }?.disconnected(instanceName: instance)
        case .resolveAgain(let instance, let avoiding):
            state.withLockedValue { $0.discovery }?.resolveAgain(instanceName: instance, avoiding: avoiding)
        }
    }

    // MARK: - Lifecycle

    /// Opens the listener, then starts advertising and browsing. Completes with the port once listening.
    ///
    /// It listens on IPv4 (`0.0.0.0`, or `127.0.0.1` for loopback-only) and on IPv6 (`::`, or `::1`) on the same port,
    /// the IPv6 socket `IPV6_V6ONLY`. Either family alone is enough: without IPv6 (a host that has it off), IPv4
    /// only; without IPv4 (a kernel that has none), IPv6 only.
    func start() -> EventLoopFuture<Int> {
        watchTrustFile()
        let (primaryHost, secondaryHost) = (configuration.listenHost, configuration.secondaryListenHost)
        return bind(primaryHost, port: configuration.port).flatMap { primary -> EventLoopFuture<[any Channel]> in
            guard let port = primary.localAddress?.port, let secondaryHost else {
                return primary.eventLoop.makeSucceededFuture([primary])
            }
            // The same port on the second address; without it, IPv4 is enough.
            return self.bind(secondaryHost, port: port)
                .map { [primary, $0] }
                .recover { error in
                    self.logger.debug(
                        "not listening on \(secondaryHost); continuing on \(primaryHost) only",
                        metadata: ["port": "\(port)", "reason": "\(error)"])
                    return [primary]
                }
        }.flatMapError { error -> EventLoopFuture<[any Channel]> in
            // No IPv4 at all: IPv6 alone (a port taken, or any other failure, is an error).
            guard let secondaryHost, Self.isAddressFamilyMissing(error) else {
                return self.group.next().makeFailedFuture(error)
            }
            self.logger.debug(
                "not listening on \(primaryHost); listening on \(secondaryHost) only", metadata: ["reason": "\(error)"])
            return self.bind(secondaryHost, port: self.configuration.port).map { [$0] }
        }.flatMapThrowing { channels in
            guard let port = channels.first?.localAddress?.port else {
                for channel in channels { channel.close(promise: nil) }
                throw ChirpError.listenFailed("no local port")
            }
            return try self.listening(on: channels, port: port)
        }.flatMapErrorThrowing { error in
            if let error = error as? ChirpError { throw error }
            throw ChirpError.listenFailed("\(error)", cause: error)
        }
    }

    /// Binds a listener to the numeric address `host` (never resolved by name: on a host without IPv4 addresses a
    /// resolver may turn `0.0.0.0` into `::ffff:0.0.0.0`); an IPv6 listener takes IPv6 only (`IPV6_V6ONLY`), beside
    /// the IPv4 one on the same port.
    private func bind(_ host: String, port: Int) -> EventLoopFuture<any Channel> {
        let address: SocketAddress
        do { address = try SocketAddress(ipAddress: host, port: port) } catch {
            return group.next().makeFailedFuture(error)
        }
        var bootstrap = makeServerBootstrap()
        if address.protocol == .inet6 {
            bootstrap = bootstrap.serverChannelOption(
                ChannelOptions.Types.SocketOption(level: .ipv6, name: .ipv6_v6only), value: 1)
        }
        return bootstrap.bind(to: address)
    }

    /// Whether a bind error says that this host has no address of that family (as opposed to a port in use).
    static func isAddressFamilyMissing(_ error: any Error) -> Bool {
        guard let error = error as? IOError else { return false }
        return [EAFNOSUPPORT, EADDRNOTAVAIL, EPROTONOSUPPORT].contains(error.errnoCode)
    }

    /// A listener whose accepted connections get Chirp's pipeline.
    private func makeServerBootstrap() -> ServerBootstrap {
        ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .resendingThinStreamsSteadily()
            .childChannelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    guard self.track(channel) else { throw ChirpError.notRunning }
                    guard self.admitInbound(channel) else { throw ChirpError.notRunning }
                    try channel.pipeline.syncOperations.addChirpHandlers(
                        role: .acceptor, local: self.localHello, configuration: self.configuration,
                        security: self.security, pairing: self.pairingDoor, delegate: self, dispatcher: self.dispatcher,
                        dialedPeerID: nil,
                        host: nil, established: nil)
                }
            }
    }

    /// Keeps the listening channels (or closes them when stopped meanwhile), then starts discovery.
    private func listening(on channels: [any Channel], port: Int) throws -> Int {
        let keep = state.withLockedValue { state -> Bool in
            guard state.table.isRunning else { return false }
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
        logger.info(
            "listening",
            metadata: [
                "port": "\(port)", "addresses": "\(addresses)", "service": "\(serviceType.registrationType)",
                "peer": "\(configuration.peerName)"
            ])
        return port
    }

    private func startDiscovery(port: Int) {
        var txt = TXTRecord()
        txt.set(TXTRecord.ReservedKey.peerID, localID)
        txt.set(TXTRecord.ReservedKey.name, configuration.peerName)
        txt.set(TXTRecord.ReservedKey.protocolVersion, String(Hello.currentProtocolVersion))
        if configuration.sharedSecret != nil { txt.set(TXTRecord.ReservedKey.secure, "1") }
        if let identity = configuration.deviceIdentity {
            txt.set(TXTRecord.ReservedKey.secure, "id")
            txt.set(TXTRecord.ReservedKey.fingerprint, identity.fingerprint.description)
        }
        for (key, value) in configuration.metadata.sorted(by: { $0.key < $1.key }) { txt.set(key, value) }
        // Peers that dial us first (the peer table's dial order) wait behind the others for their resolve (only when we
        // advertise: else nobody does).
        let localID = self.localID
        let resolveLater: (@Sendable (String) -> Bool)? =
            configuration.advertises
            ? { @Sendable instance in Table.dialsUsFirst(instanceName: instance, localID: localID) } : nil
        let discovery = ServiceDiscovery(
            serviceType: serviceType, domain: configuration.domain, interfaceIndex: configuration.interfaceIndex,
            advertisement: configuration.advertises
                ? .init(
                    instanceName: Self.instanceName(name: configuration.peerName, id: localID), port: UInt16(port),
                    txt: txt)
                : nil,
            resolveLater: resolveLater,
            backend: configuration.discoveryBackend,
            metrics: metrics,
            logger: logger
        ) { [weak self] event in self?.handle(event) }
        let started = state.withLockedValue { state -> Bool in
            guard state.table.isRunning else { return false }
            state.discovery = discovery
            return true
        }
        if started { discovery.start() }
    }

    /// The DNS-SD instance name: the display name plus a short id, so that equal names never conflict.
    static func instanceName(name: String, id: String) -> String {
        Table.instanceName(name: name, id: id)
    }

    /// Says goodbye to every peer, closes every socket and DNS-SD reference. Completes when all are released.
    func stop() -> EventLoopFuture<Void> {
        let (servers, discovery, channels, timers, connections) = state.withLockedValue { state in
            let connections = state.table.connections
            defer {
                state.serverChannels = []
                state.discovery = nil
            }
            return (
                state.serverChannels, state.discovery, Array(state.openChannels.values), state.dialTimers.removeAll(),
                connections
            )
        }
        apply(.stop)  // goodbyes on the connections in use, and the disconnect events
        state.withLockedValue { state in
            state.trustWatch?.cancel()
            state.trustWatch = nil
        }
        dispatcher.cancelResponders()
        for timer in timers { timer.cancel() }
        let loop = group.any()
        var futures: [EventLoopFuture<Void>] = []
        for channel in channels {
            futures.append(channel.closeFuture)
            // Connections close after their goodbye is flushed; anything else (handshakes in flight) now.
            if !connections.contains(where: { $0.channel === channel }) { channel.close(promise: nil) }
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
        return EventLoopFuture.whenAllComplete(futures, on: loop).map { _ in () }
    }

    /// How often the trust file is looked at: a removed device's connections close within a second.
    static let trustFileLook = TimeAmount.milliseconds(250)

    /// Looks at the trust file (or, in trust on first use, the pins file) every ``trustFileLook`` (device-identity
    /// mode): a change is read whole, and the connections of the devices the trust file no longer lists are closed.
    private func watchTrustFile() {
        guard let keeper = security.keeper else { return }
        let task = group.next().scheduleRepeatedTask(initialDelay: Self.trustFileLook, delay: Self.trustFileLook) {
            [weak self] _ in
            let gone = keeper.reloadIfChanged()
            guard let self, !gone.isEmpty else { return }
            self.closeConnections(of: gone)
        }
        state.withLockedValue { $0.trustWatch = task }
    }

    /// Closes every connection whose peer presented one of these fingerprints.
    private func closeConnections(of devices: Set<Fingerprint>) {
        let connections = state.withLockedValue { state in
            state.table.connections.filter { connection in connection.fingerprint.map(devices.contains) ?? false }
        }
        for connection in connections { connection.channel.close(promise: nil) }
    }

    /// How many channels are open (listeners not included): the connections in their handshake, in use, retired.
    var openChannelCount: Int { state.withLockedValue { $0.openChannels.count } }

    /// Registers a channel so `stop()` can close it; `false` once stopped.
    private func track(_ channel: any Channel) -> Bool {
        let id = ObjectIdentifier(channel)
        let accepted = state.withLockedValue { state -> Bool in
            guard state.table.isRunning else { return false }
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
        let limit = configuration.maximumPendingHandshakes
        let (admitted, warn) = state.withLockedValue { state -> (Bool, Bool) in
            guard state.pendingInbound.count < limit else {
                defer { state.warnedPendingLimit = true }
                return (false, !state.warnedPendingLimit)
            }
            state.pendingInbound.insert(id)
            return (true, false)
        }
        if !admitted { metrics.handshakeLimitHits.increment() }
        if warn {
            logger.warning(
                "too many connections in their handshake at once; closing new ones until some finish",
                metadata: [
                    "limit": "\(limit)"
                ])
        }
        if admitted {
            channel.closeFuture.whenComplete { _ in self.state.withLockedValue { _ = $0.pendingInbound.remove(id) } }
        }
        return admitted
    }

    // MARK: - Peers

    var availablePeers: [Peer] {
        state.withLockedValue { $0.table.availablePeers }
    }

    /// The connections `.all` sends to: one per app (and per tool with ``Configuration/includesTools``).
    var connections: [PeerConnection] {
        state.withLockedValue { $0.table.recipients }
    }

    func connection(to peerID: String) -> PeerConnection? {
        state.withLockedValue { $0.table.connection(to: peerID) }
    }

    /// Whether the peer `peerID` advertises itself, as the table knows it; `nil` when the table does not know it
    /// (``PeerTable/isAdvertised(_:)``).
    func peerIsAdvertised(_ peerID: String) -> Bool? {
        state.withLockedValue { $0.table.isAdvertised(peerID) }
    }

    var port: Int? { state.withLockedValue { $0.listenPort } }

    // MARK: - Discovery

    private func handle(_ event: DiscoveryEvent) {
        switch event {
        case .advertised(let name):
            apply(.advertised(true))
            hub.emit(.advertised(instanceName: name))
        case .unavailable(let message):
            apply(.advertised(false))
            hub.emit(.discoveryUnavailable(message))
        case .sighted(let name):
            hub.emit(.instanceFound(instanceName: name))
        case .found(let service):
            apply(.found(Self.advert(of: service)))
        case .lost(let instance):
            apply(.lost(instanceName: instance))
        }
    }

    /// What the peer table needs of a resolved service.
    static func advert(of service: DiscoveredService) -> Table.Advert {
        var metadata = service.txt.dictionary
        for key in TXTRecord.ReservedKey.all { metadata[key] = nil }
        // Discovery lists them in dialing order (IPv4, global IPv6, scoped link-local IPv6); sorted again for safety.
        let address = IPAddressText.dialingOrder(service.addresses).first
        return Table.Advert(
            instanceName: service.instanceName,
            peerID: service.txt[TXTRecord.ReservedKey.peerID] ?? "",
            name: service.txt[TXTRecord.ReservedKey.name] ?? service.instanceName,
            protocolVersion: service.txt[TXTRecord.ReservedKey.protocolVersion],
            usesSecret: service.txt[TXTRecord.ReservedKey.secure] == "1",
            usesIdentity: service.txt[TXTRecord.ReservedKey.secure] == "id",
            fingerprint: service.txt[TXTRecord.ReservedKey.fingerprint].flatMap { try? Fingerprint(parsing: $0) },
            metadata: metadata,
            host: service.host,
            addresses: service.addresses.map { IPAddressText.endpoint($0, port: Int(service.port)) },
            dialAddress: address.map { Table.DialAddress(host: $0, port: Int(service.port)) })
    }

    // MARK: - Dialing

    private func dial(_ id: String, address: Table.DialAddress, peer: Peer) {
        let endpoint = IPAddressText.endpoint(address.host, port: address.port)
        guard let policy = configuration.acceptPolicy else {
            logger.debug("dialing", metadata: ["peer": "\(id.prefix(8))", "address": "\(endpoint)"])
            _ = connect(
                host: address.host, port: address.port, dialedPeerID: id, peerHost: peer.host,
                advertised: peer.fingerprint)
            return
        }
        // Ask the accept policy before dialing, with what the advertisement says, so that a peer we would refuse
        // never takes the connection for established (it is asked again once the peer introduced itself).
        let candidate = ConnectionCandidate(peer: peer, address: endpoint, isInbound: false)
        let decision = group.next().makePromise(of: Bool.self)
        decision.completeWithTask { await policy(candidate) }
        decision.futureResult.whenSuccess { accepted in
            if accepted {
                self.logger.debug("dialing", metadata: ["peer": "\(id.prefix(8))", "address": "\(endpoint)"])
                _ = self.connect(
                    host: address.host, port: address.port, dialedPeerID: id, peerHost: peer.host,
                    advertised: peer.fingerprint)
            } else {
                let reason = HandshakeError.notAccepted(name: peer.name).description
                self.logger.warning("not dialing \(peer): \(reason)")
                self.hub.emit(.connectionRefused(peer: peer.description, reason: reason))
                self.apply(.dialFailed(peerID: id, .refused))
            }
        }
    }

    /// Dials `host:port`; completes with the connection once the handshake is done. In device-identity mode the peer
    /// must present the certificate whose fingerprint it `advertised` (when given).
    func connect(
        host: String, port: Int, dialedPeerID: String?, peerHost: String?, advertised: Fingerprint? = nil
    ) -> EventLoopFuture<PeerConnection> {
        let loop = group.next()
        let established = loop.makePromise(of: PeerConnection.self)
        let bootstrap = ClientBootstrap(group: loop)
            .connectTimeout(configuration.connectTimeout.timeAmount)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .resendingThinStreamsSteadily()
            .channelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    guard self.track(channel) else { throw ChirpError.notRunning }
                    try channel.pipeline.syncOperations.addChirpHandlers(
                        role: .dialer, local: self.localHello, configuration: self.configuration,
                        security: self.security, advertised: advertised, delegate: self, dispatcher: self.dispatcher,
                        dialedPeerID: dialedPeerID, host: peerHost,
                        established: established)
                }
            }
        // A link-local address carries its scope (`fe80::1%eth0`), which NIO's numeric parsing does not take.
        let connecting =
            SocketAddress.scoped(host, port: port).map { bootstrap.connect(to: $0) }
            ?? bootstrap.connect(host: host, port: port)
        connecting
            .whenFailure { error in
                established.fail(error)
                guard let dialedPeerID else { return }
                self.apply(
                    .dialFailed(
                        peerID: dialedPeerID,
                        .failed(reason: "\(error)", connectionRefused: Self.isConnectionRefused(error))))
            }
        return established.futureResult
    }

    /// Dials `host:port` to pair (``Transceiver/pair(with:timeout:showingCode:)``): completes with the result once the
    /// other side's person said yes and both sides wrote their trust files.
    func pair(
        host: String, port: Int, advertised: Fingerprint?, timeout: Duration,
        showCode: @escaping @Sendable (String) -> Void
    ) -> EventLoopFuture<PairingResult> {
        let loop = group.next()
        let result = loop.makePromise(of: PairingResult.self)
        guard let keeper = security.keeper, let identity = configuration.deviceIdentity else {
            result.fail(
                ChirpError.invalidConfiguration(
                    "pairing needs a device identity: set security to .identity(_:trust:)"))
            return result.futureResult
        }
        let call = PairingCall(
            keeper: keeper, own: identity.fingerprint, advertised: advertised, showCode: showCode, result: result)
        let endpoint = IPAddressText.endpoint(host, port: port)
        let bootstrap = ClientBootstrap(group: loop)
            .connectTimeout(configuration.connectTimeout.timeAmount)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    guard self.track(channel) else { throw ChirpError.notRunning }
                    try channel.pipeline.syncOperations.addPairingHandlers(
                        local: self.localHello, configuration: self.configuration, security: self.security,
                        call: call, timeout: timeout.timeAmount)
                }
            }
        let connecting =
            SocketAddress.scoped(host, port: port).map { bootstrap.connect(to: $0) }
            ?? bootstrap.connect(host: host, port: port)
        connecting.whenFailure { error in
            let reason: String
            if let error = error as? NIOConnectionError {
                reason = Transceiver.reason(for: error)
            } else if case ChannelError.connectTimeout = error {
                reason = "timed out"
            } else {
                reason = "\(error)"
            }
            result.fail(ChirpError.pairingFailed(with: endpoint, reason: "could not connect: \(reason)", cause: error))
        }
        return result.futureResult
    }

    /// Whether a connect error says that nothing listens at that address.
    static func isConnectionRefused(_ error: any Error) -> Bool {
        if let error = error as? IOError { return error.errnoCode == ECONNREFUSED }
        if let error = error as? NIOConnectionError {
            return !error.connectionErrors.isEmpty
                && error.connectionErrors.allSatisfy { isConnectionRefused($0.error) }
        }
        return false
    }

    // MARK: - ConnectionDelegate

    func connectionEstablished(_ connection: PeerConnection) {
        state.withLockedValue { _ = $0.pendingInbound.remove(ObjectIdentifier(connection.channel)) }
        apply(
            .established(
                .init(
                    connection: connection, peer: connection.peer, role: connection.role, dialerID: connection.dialerID,
                    openedAt: connection.openedAt)))
    }

    func afterEventsDelivered(_ body: @escaping @Sendable () -> Void) {
        hub.afterPendingEvents(body)
    }

    func connectionClosed(_ connection: PeerConnection, peerStopping: Bool, refusal: String?) {
        let actions = apply(
            .closed(connection, peerID: connection.remote.peerID, peerStopping: peerStopping, refusal: refusal))
        for case .emit(.peerDisconnected) in actions {
            (refusal != nil
                ? metrics.disconnectsRefused : peerStopping ? metrics.disconnectsGoodbye : metrics.disconnectsLost)
                .increment()
        }
    }

    func handshakeFailed(role: ConnectionRole, remote: String, dialedPeerID: String?, error: (any Error)?) {
        let explained = error.flatMap {
            HandshakeError.explaining(
                $0, withSecret: configuration.sharedSecret != nil, withIdentity: configuration.deviceIdentity != nil)
        }
        var refused = false
        if let explained {
            let who = dialedPeerID.flatMap { id in state.withLockedValue { $0.table.peer(id)?.description } } ?? remote
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
        if role == .dialer, let id = dialedPeerID {
            // A refusal will not change by itself: the table waits long before asking again.
            apply(.dialFailed(peerID: id, refused ? .refused : .failed(reason: nil, connectionRefused: false)))
        }
    }

    /// Logs `error` and delivers it as an ``TransceiverEvent/error(_:)`` event.
    func report(_ error: ChirpError, logLevel: Logger.Level) {
        dispatcher.report(error, logLevel: logLevel)
    }
}

extension PeerConnection: Hashable {
    static func == (lhs: PeerConnection, rhs: PeerConnection) -> Bool { lhs === rhs }
    func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
