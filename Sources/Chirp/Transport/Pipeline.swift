import ChirpTrust
import ChirpWire
import Logging
import NIOCore

extension ChannelPipeline.SynchronousOperations {
    /// Installs Chirp's protocol on a new TCP channel, in order:
    ///
    /// 1. TLS (`NIOSSLServerHandler` / `NIOSSLClientHandler`), with a shared secret or a device identity
    /// 2. ``FrameReader``: bytes -> frames (``FrameDecoder``), with the size limits
    /// 3. ``HandshakeHandler``: exchanges and checks hellos, then removes itself
    /// 4. ``HeartbeatHandler``: when we last wrote and last read a frame, checked by scheduled tasks (no promise per write)
    /// 5. ``PeerChannelHandler``: frames -> peer table (``ConnectionDelegate``) and ``MessageDispatcher``
    /// 6. ``ReadGate``: stops reading while a consumer of this connection's messages is full (``MessageSequence``)
    ///
    /// Outbound frames are complete `ByteBuffer`s written by ``PeerConnection``, so no encoder is needed.
    func addChirpHandlers(
        role: ConnectionRole, local: Hello, configuration: Configuration, security: TransportSecurity,
        advertised: Fingerprint? = nil, pairing: PairingDoor? = nil, delegate: any ConnectionDelegate,
        dispatcher: MessageDispatcher, dialedPeerID: String?, host: String?,
        established: EventLoopPromise<PeerConnection>?
    ) throws {
        if let tls = try security.tlsHandler(dialed: role == .dialer) { try addHandler(tls) }
        try addHandler(FrameReader(FrameDecoder(maxFrameSize: configuration.maximumMessageSize)))
        try addHandler(
            HandshakeHandler(
                local: local, timeout: configuration.handshakeTimeout.timeAmount, role: role,
                acceptPolicy: configuration.acceptPolicy, identity: security.identityCheck(advertised: advertised),
                pairing: pairing))
        try addHandler(
            HeartbeatHandler(
                interval: configuration.heartbeatInterval.timeAmount,
                timeout: configuration.heartbeatTimeout.timeAmount))
        let gate = ReadGate()
        try addHandler(
            PeerChannelHandler(
                delegate: delegate, dispatcher: dispatcher, role: role, localID: local.peerID,
                dialedPeerID: dialedPeerID, host: host,
                outboundLimit: configuration.outboundLimit, burstLinger: configuration.burstLinger.timeAmount,
                heartbeatTimeout: Double(configuration.heartbeatTimeout.timeAmount.nanoseconds) / 1e9,
                logger: configuration.logger, maximumMessageSize: configuration.maximumMessageSize,
                established: established, readGate: gate))
        try addHandler(gate)
    }

    /// Installs the dialing side of a pairing (``PairingHandler``): TLS with the device identity, ``FrameReader``,
    /// and the pairing handler, which takes the place of the handshake and of everything after it.
    func addPairingHandlers(
        local: Hello, configuration: Configuration, security: TransportSecurity, call: PairingCall, timeout: TimeAmount
    ) throws {
        if let tls = try security.tlsHandler(dialed: true) { try addHandler(tls) }
        try addHandler(FrameReader(FrameDecoder(maxFrameSize: configuration.maximumMessageSize)))
        try addHandler(PairingHandler(initiator: call, local: local, timeout: timeout))
    }
}
