import ChirpDiscovery
import ChirpSupport
import ChirpWire
import Foundation
import Logging
import Metrics
import NIOCore
import NIOPosix

/// Everything a ``Transceiver`` needs to know, as one value with documented defaults.
///
/// ```swift
/// var configuration = Configuration(serviceType: "chat")
/// configuration.peerName = "alice"
/// configuration.metadata = ["room": "lobby"]
/// configuration.interface = .loopback
/// let transceiver = Transceiver(configuration: configuration)
/// ```
public struct Configuration: Sendable {
    /// Where to advertise, browse and listen: ``/ChirpDiscovery/NetworkInterface``.
    public typealias Interface = NetworkInterface
    /// Which DNS-SD implementation a transceiver talks to: ``/ChirpDiscovery/DiscoveryBackend``.
    public typealias DiscoveryBackend = ChirpDiscovery.DiscoveryBackend

    /// The DNS-SD service type, without underscore or protocol: `chat` is advertised as `_chat._tcp`.
    /// 1-15 letters, digits and hyphens (RFC 6763). Default: `chirp`.
    public var serviceType: String
    /// The DNS-SD domain. Default: `local.` (multicast DNS); a wide-area domain is passed to the daemon as is.
    public var domain: String = "local."
    /// The name other peers see. Default: this machine's host name.
    public var peerName: String = Configuration.defaultPeerName
    /// This peer's stable identifier, compared to break ties when two peers dial each other at once.
    /// Default: a new random UUID for each configuration value.
    public var peerID: String = UUID().uuidString
    /// Extra key/value pairs published in the TXT record and the handshake. Keys `id`, `name`, `pv` and `sec` are
    /// reserved; each `key=value` must fit in 255 bytes. Default: empty.
    public var metadata: [String: String] = [:]
    /// Where to advertise, browse and listen. Default: ``/ChirpDiscovery/NetworkInterface/any``.
    public var interface: Interface = .any
    /// Where the transceiver's metrics go (Docs/Metrics.md): `nil` (the default) for the process's bootstrapped
    /// swift-metrics backend (`MetricsSystem.bootstrap`), whose default records nothing.
    public var metricsFactory: (any MetricsFactory)? = nil
    /// Which DNS-SD implementation to use. Default: ``/ChirpDiscovery/DiscoveryBackend/automatic`` (the
    /// `CHIRP_DISCOVERY` environment variable when set, else Avahi's own client library on Linux and `dns_sd` on
    /// macOS).
    public var discoveryBackend: DiscoveryBackend = .automatic
    /// Whether this transceiver advertises itself. With `false` it browses and dials the peers it finds but is not
    /// announced, so no one discovers it or dials it: the mode for a command-line tool that talks to running apps
    /// for a moment. It skips the daemon's registration (and its probing), dials every peer at once, and apps never
    /// see it come and go in their discovery. Its peers know it as a `Peer.Role.tool`. Default: `true`.
    public var advertises: Bool = true
    /// Whether tools (peers that do not advertise themselves: `Peer.Role.tool`, such as `chirp send` or
    /// an app's command-line remote) count as peers here: listed in ``Transceiver/availablePeers`` and
    /// ``Transceiver/connectedPeers``, reported by the peer events, and reached by `.all`. Their messages and requests
    /// are delivered and answered either way. Default: `false`.
    public var includesTools: Bool = false
    /// The TCP port to listen on; 0 picks a free one. Default: 0.
    public var port: Int = 0
    /// How often a quiet connection sends a heartbeat. Default: 0.5 s.
    public var heartbeatInterval: Duration = .milliseconds(500)
    /// A connection that receives nothing (not even a heartbeat) for this long is closed and its peer reported
    /// disconnected. Default: 2.5 s. On Linux, a connection whose peer's data reached this host in the first half
    /// of that time, but was not read yet (this side's event loop is busy), is kept.
    public var heartbeatTimeout: Duration = .milliseconds(2500)
    /// Time allowed for a new connection to complete the handshake. Default: 5 s.
    public var handshakeTimeout: Duration = .seconds(5)
    /// Time allowed for a TCP connect. Default: 5 s.
    public var connectTimeout: Duration = .seconds(5)
    /// Timeout of ``Transceiver/request(_:to:as:timeout:)`` when none is given. Default: 10 s.
    public var requestTimeout: Duration = .seconds(10)
    /// The largest frame (header and encoded payload) sent or accepted; larger inbound frames close the
    /// connection before anything is allocated for them. Default: 64 MiB.
    public var maximumMessageSize: Int = 64 * 1024 * 1024
    /// Bytes that may wait in Chirp's queue for one peer that reads slower than we write. A message that would go over
    /// it is not queued: `send` throws ``/ChirpSupport/ChirpError/Code/outboundLimitExceeded`` and `broadcast` skips
    /// that peer and reports it as an ``TransceiverEvent/error(_:)`` event. Default: 64 MiB.
    public var outboundLimit: Int = 64 * 1024 * 1024
    /// How long a connection gathers messages into one write while a burst of sends to its peer goes on. Once a
    /// write found at least ``burstFrameCount`` messages queued since the one before, the connection's event loop
    /// writes the next batch this much later instead of being woken by the sending thread for it: during a burst, the
    /// sender no longer pays for waking the event loop (a system call and a wake-up of another CPU, about a third of
    /// a small message's sending cost). Requests and pings are written at once, and so is a message or reply sent
    /// outside a burst (after a pause); one queued during a burst waits at most this long. `.zero` turns it off.
    /// Default: 100 µs.
    public var burstLinger: Duration = .microseconds(100)
    /// Messages written at once that make a burst (see ``burstLinger``).
    public static let burstFrameCount = 8
    /// How many received messages may wait for a slow consumer of ``Transceiver/messages(of:)`` or
    /// `messages(of: RawMessage.self)` before Chirp stops reading from the peers that send them. Default: stop at 256
    /// waiting messages, read again below 64.
    public var backpressure = Backpressure()

    /// How many async responders (`Transceiver.respond(to:with:)` (its async form)) may run at
    /// once. Requests beyond it wait in arrival order, and the connection each came on is not read meanwhile, so a
    /// peer that floods requests slows down instead of making this app start a task for each. Default: 64.
    public var maximumConcurrentResponders: Int = 64

    /// When a consumer of received messages is full, and when it has room again (see ``MessageSequence``).
    public struct Backpressure: Sendable, Equatable {
        /// Below this many waiting messages, reading resumes. Default: 64.
        public var lowWatermark: Int
        /// At this many waiting messages, Chirp stops reading from the senders. Default: 256.
        public var highWatermark: Int

        /// Watermarks in messages; `1 <= lowWatermark <= highWatermark` (checked by ``Transceiver/start()``).
        public init(lowWatermark: Int = 64, highWatermark: Int = 256) {
            self.lowWatermark = lowWatermark
            self.highWatermark = highWatermark
        }
    }
    /// How message values become payload bytes. Default: ``/ChirpWire/JSONMessageCoder``.
    public var coder: any MessageCoder = JSONMessageCoder()
    /// Where Chirp logs. The library never bootstraps logging and prints nothing on its own: pass the logger your
    /// app set up, e.g. `configuration.logger = Logger(label: "chirp")` after `LoggingSystem.bootstrap`.
    /// Default: a logger that discards everything (swift-log's `SwiftLogNoOpLogHandler`).
    public var logger: Logger = .chirpSilent
    /// The event loops that run connections. Default: NIO's shared `MultiThreadedEventLoopGroup.singleton`.
    public var eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton

    /// How connections are protected.
    public enum Security: Sendable {
        /// Open: any host that can reach the port can connect, send messages and read traffic. For demos and
        /// trusted networks.
        case none
        /// Peers holding the same ``SharedSecret`` authenticate each other and encrypt everything (TLS 1.2 with a
        /// pre-shared key derived from the secret and the service type). Peers without it cannot connect.
        case sharedSecret(SharedSecret)
        /// Each device has its own key (``DeviceIdentity``): peers authenticate each other by their certificates'
        /// fingerprints and encrypt everything (mutual TLS 1.3); `trust` says whom to accept. Peers without an
        /// identity cannot connect.
        ///
        /// ```swift
        /// let identity = try DeviceIdentity.loadOrCreate(name: "listr")
        /// configuration.security = .identity(identity, trust: .trustedPeers())
        /// ```
        case identity(DeviceIdentity, trust: PeerTrust)
    }

    /// How connections are protected. Default: ``Security/none`` (open).
    public var security: Security = .none
    /// Whether devices may ask to pair with this transceiver, and who says yes (device-identity mode only). Default:
    /// `nil`: requests are refused with a sentence that says so.
    public var pairing: PairingPolicy?
    /// Decides, per peer, whether a connection is accepted, after the peer has proven it holds the shared secret
    /// (if any) and introduced itself. Return `false` to refuse: both sides log why, and the peer is retried only with
    /// a long backoff. In the spirit of MultipeerKit's invitation handler. Before dialing a discovered peer it is also
    /// asked with what the advertisement says, so a refused peer is not dialed at all. Default: `nil` (accept every
    /// peer).
    ///
    /// ```swift
    /// configuration.acceptPolicy = { candidate in candidate.peer.name != "mallory" }
    /// ```
    public var acceptPolicy: (@Sendable (ConnectionCandidate) async -> Bool)?
    /// Inbound connections allowed to be in their handshake at once; more are closed at once, so a flood of stalled
    /// connections cannot use up the process's sockets. Each is dropped after ``handshakeTimeout`` anyway.
    /// Default: 256.
    public var maximumPendingHandshakes: Int = 256

    /// A configuration for `serviceType` with every other setting at its default.
    public init(serviceType: String = "chirp") {
        self.serviceType = serviceType
    }

    /// This machine's host name without domain, or `chirp` if it has none.
    public static var defaultPeerName: String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return "chirp" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let short = name.split(separator: ".").first.map(String.init) ?? name
        return short.isEmpty ? "chirp" : short
    }

    /// Checks every setting; throws the first problem found, worded so the user can fix it.
    func validated() throws -> ServiceType {
        let type = try ServiceType(serviceType)
        if peerName.isEmpty || peerName.utf8.count > 200 {
            throw ChirpError.invalidConfiguration("peerName must be 1-200 bytes, got \(peerName.utf8.count)")
        }
        if peerID.isEmpty || peerID.utf8.count > 128 || peerID.contains("=") {
            throw ChirpError.invalidConfiguration("peerID must be 1-128 bytes without '='")
        }
        for (key, value) in metadata {
            if TXTRecord.ReservedKey.all.contains(key.lowercased()) {
                throw ChirpError.invalidConfiguration("metadata key '\(key)' is reserved by Chirp; pick another name")
            }
            if let problem = TXTRecord.problem(key: key, value: value) {
                throw ChirpError.invalidConfiguration(problem)
            }
        }
        if !(0...65535).contains(port) { throw ChirpError.invalidConfiguration("port must be 0-65535, got \(port)") }
        if maximumMessageSize < 1024 {
            throw ChirpError.invalidConfiguration("maximumMessageSize must be at least 1024 bytes")
        }
        if outboundLimit < 1 { throw ChirpError.invalidConfiguration("outboundLimit must be positive") }
        if burstLinger < .zero || burstLinger > .milliseconds(10) {
            throw ChirpError.invalidConfiguration("burstLinger must be between zero and 10 ms, got \(burstLinger)")
        }
        if maximumConcurrentResponders < 1 {
            throw ChirpError.invalidConfiguration("maximumConcurrentResponders must be at least 1")
        }
        if backpressure.lowWatermark < 1 || backpressure.lowWatermark > backpressure.highWatermark {
            throw ChirpError.invalidConfiguration(
                "backpressure watermarks must satisfy 1 <= lowWatermark <= highWatermark "
                    + "(got \(backpressure.lowWatermark) and \(backpressure.highWatermark))")
        }
        if let pairing {
            if deviceIdentity == nil {
                throw ChirpError.invalidConfiguration(
                    "pairing needs a device identity: set security to .identity(_:trust:) as well")
            }
            if pairing.maximumRequestsPerMinute < 1 || pairing.timeout <= .zero {
                throw ChirpError.invalidConfiguration(
                    "pairing.maximumRequestsPerMinute and pairing.timeout must be positive")
            }
        }
        if maximumPendingHandshakes < 1 {
            throw ChirpError.invalidConfiguration("maximumPendingHandshakes must be positive")
        }
        if heartbeatInterval <= .zero || heartbeatTimeout <= heartbeatInterval {
            throw ChirpError.invalidConfiguration(
                "heartbeatTimeout must be longer than heartbeatInterval, and both positive")
        }
        if case .named(let name) = interface, DNSSDEnvironment.interfaceIndex(named: name) == nil {
            throw ChirpError.invalidConfiguration("no network interface named '\(name)'")
        }
        return type
    }

    /// The interface index DNS-SD calls take (0 = all).
    var interfaceIndex: UInt32 { interface.index }

    /// The shared secret, if any.
    var sharedSecret: SharedSecret? {
        if case .sharedSecret(let secret) = security { return secret }
        return nil
    }

    /// The device identity, if any.
    var deviceIdentity: DeviceIdentity? {
        if case .identity(let identity, _) = security { return identity }
        return nil
    }

    /// The address the listener binds.
    var listenHost: String {
        interface == .loopback ? "127.0.0.1" : "0.0.0.0"
    }

    /// The IPv6 address the listener binds, on the port of the first, when the host has it: `::1` in loopback-only
    /// mode, `::` otherwise.
    var secondaryListenHost: String? {
        interface == .loopback ? "::1" : "::"
    }
}

extension Duration {
    /// As NIO's `TimeAmount` (nanoseconds in an `Int64`, some 292 years): a longer duration, such as a request
    /// timeout meant as "never", becomes the longest one NIO can hold, of the same sign, rather than overflowing.
    package var timeAmount: TimeAmount {
        let (seconds, attoseconds) = components
        let saturated = TimeAmount.nanoseconds(seconds < 0 ? .min : .max)
        let (whole, overflowed) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflowed else { return saturated }
        let (total, overflowedAgain) = whole.addingReportingOverflow(attoseconds / 1_000_000_000)
        return overflowedAgain ? saturated : .nanoseconds(total)
    }

    /// As fractional seconds.
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
