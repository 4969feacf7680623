import ChirpWire
import Logging
import NIOCore

extension ChannelPipeline.SynchronousOperations {
    /// Installs Chirp's protocol on a new TCP channel, in order:
    ///
    /// 1. TLS (`NIOSSLServerHandler` / `NIOSSLClientHandler`), when a shared secret is configured
    /// 2. ``FrameReader``: bytes -> frames (``FrameDecoder``), with the size limits
    /// 3. ``HandshakeHandler``: exchanges and checks hellos, then removes itself
    /// 4. ``HeartbeatHandler``: when we last wrote and last read a frame, checked by scheduled tasks (no promise per write)
    /// 5. ``PeerChannelHandler``: frames -> peer table (``ConnectionDelegate``) and ``MessageDispatcher``
    /// 6. ``ReadGate``: stops reading while a consumer of this connection's messages is full (``MessageSequence``)
    ///
    /// Outbound frames are complete `ByteBuffer`s written by ``PeerConnection``, so no encoder is needed.
    func addChirpHandlers(
        role: ConnectionRole, local: Hello, settings: ConnectionSettings, delegate: any ConnectionDelegate,
        dispatcher: MessageDispatcher, dialedPeerID: String?, host: String?,
        established: EventLoopPromise<PeerConnection>?
    ) throws {
        if let tls = settings.tls { try addHandler(try tls.handler(dialed: role == .dialer)) }
        try addHandler(FrameReader(FrameDecoder(maxFrameSize: settings.maximumMessageSize)))
        try addHandler(
            HandshakeHandler(
                local: local, timeout: settings.handshakeTimeout, role: role, acceptPolicy: settings.acceptPolicy))
        try addHandler(HeartbeatHandler(interval: settings.heartbeatInterval, timeout: settings.heartbeatTimeout))
        let gate = ReadGate()
        try addHandler(
            PeerChannelHandler(
                delegate: delegate, dispatcher: dispatcher, role: role, localID: local.peerID,
                dialedPeerID: dialedPeerID, host: host,
                outboundLimit: settings.outboundLimit, burstLinger: settings.burstLinger,
                heartbeatTimeout: Double(settings.heartbeatTimeout.nanoseconds) / 1e9,
                logger: settings.logger, established: established, readGate: gate))
        try addHandler(gate)
    }
}

/// The parts of ``Configuration`` a connection needs, in NIO's units.
struct ConnectionSettings: Sendable {
    var maximumMessageSize: Int
    var outboundLimit: Int
    var burstLinger: TimeAmount
    var handshakeTimeout: TimeAmount
    var heartbeatInterval: TimeAmount
    var heartbeatTimeout: TimeAmount
    var connectTimeout: TimeAmount
    var logger: Logger
    var tls: TLSContexts?
    var acceptPolicy: (@Sendable (ConnectionCandidate) async -> Bool)?

    init(_ configuration: Configuration, tls: TLSContexts?) {
        self.tls = tls
        acceptPolicy = configuration.acceptPolicy
        maximumMessageSize = configuration.maximumMessageSize
        outboundLimit = configuration.outboundLimit
        burstLinger = configuration.burstLinger.timeAmount
        handshakeTimeout = configuration.handshakeTimeout.timeAmount
        heartbeatInterval = configuration.heartbeatInterval.timeAmount
        heartbeatTimeout = configuration.heartbeatTimeout.timeAmount
        connectTimeout = configuration.connectTimeout.timeAmount
        logger = configuration.logger
    }
}
