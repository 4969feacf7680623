import ChirpSupport
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// Finds the other peers of a service type on the network, connects to each of them, and exchanges typed messages.
///
/// ```swift
/// struct ChatLine: Codable, Sendable, ChirpMessage {
///     static let chirpTypeName = "chat.line"
///     var text: String
/// }
///
/// let transceiver = Transceiver(serviceType: "chat")
/// try transceiver.receive(ChatLine.self) { line, sender in
///     print("[\(sender.name)] \(line.text)")
/// }
/// try await transceiver.start()
/// try await transceiver.send(ChatLine(text: "hello"), to: .all)
/// ```
///
/// A transceiver advertises itself through the platform's DNS-SD daemon (Avahi on Linux, Bonjour on macOS), browses
/// for peers of the same type, and keeps exactly one TCP connection to each. Handlers can be registered at any time;
/// ``start()`` and ``shutdown()`` can be called any number of times.
public final class Transceiver: Sendable {
    /// The configuration this transceiver was created with.
    public let configuration: Configuration

    let router = Router()
    let hub = EventHub()
    private let engine = NIOLockedValueBox<Engine?>(nil)

    /// Creates a transceiver; nothing happens on the network until ``start()``.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// Creates a transceiver for `serviceType` with every other setting at its default.
    ///
    /// ```swift
    /// let transceiver = Transceiver(serviceType: "chat")
    /// ```
    public convenience init(serviceType: String) {
        self.init(configuration: Configuration(serviceType: serviceType))
    }

    /// This peer as others see it.
    public var localPeer: Peer {
        Peer(
            id: configuration.peerID, name: configuration.peerName, metadata: configuration.metadata, isConnected: true,
            role: configuration.advertises ? .app : .tool)
    }

    /// Whether the transceiver was started and not stopped since.
    package var isRunning: Bool { engine.withLockedValue { $0 != nil } }

    /// The TCP port this transceiver listens on, once listening (apps read it from ``TransceiverEvent/started(port:)``
    /// or choose it with ``Configuration/port``).
    package var port: Int? { engine.withLockedValue { $0 }?.port }

    // MARK: - Lifecycle

    /// Starts listening, advertising and browsing, and returns once the listener is open; does nothing if already
    /// running.
    ///
    /// ```swift
    /// let transceiver = Transceiver(serviceType: "chat")
    /// let events = transceiver.makeEvents()
    /// try await transceiver.start()
    /// for await event in events {
    ///     if case .started(let port) = event { print("listening on port \(port)") }
    ///     break
    /// }
    /// await transceiver.shutdown()
    /// ```
    ///
    /// Problems found later (no DNS-SD daemon, a peer that refuses) are logged and reported as events
    /// (``makeEvents()``); discovery retries by itself until the daemon answers.
    /// - Throws: ``/ChirpSupport/ChirpError/Code/invalidServiceType`` or
    ///   ``/ChirpSupport/ChirpError/Code/invalidConfiguration`` when the configuration is not valid,
    ///   ``/ChirpSupport/ChirpError/Code/listenFailed`` when the port cannot be opened.
    public func start() async throws {
        if let started = try startEngine() {
            do {
                _ = try await started.get()
            } catch {
                await shutdown()
                throw error
            }
        }
    }

    /// Starts the engine when not running; returns the future of its listener, or `nil` when already running.
    func startEngine() throws -> EventLoopFuture<Int>? {
        let serviceType = try configuration.validated()
        let created: Engine? = try engine.withLockedValue { engine in
            guard engine == nil else { return nil }
            let new = try Engine(configuration: configuration, serviceType: serviceType, router: router, hub: hub)
            engine = new
            return new
        }
        guard let created else { return nil }
        let started = created.start()
        started.whenFailure { [configuration] error in
            if (error as? ChirpError)?.code == .notRunning { return }  // stopped while starting
            configuration.logger.error("could not start: \(error)")
        }
        return started
    }

    /// Says goodbye to every peer, releases every socket, DNS-SD reference and timer, and returns once they are
    /// released and every event up to ``TransceiverEvent/stopped`` was delivered. Does nothing if not running.
    ///
    /// ```swift
    /// try await transceiver.start()
    /// // ...
    /// await transceiver.shutdown()
    /// ```
    public func shutdown() async {
        if let stopped = stopEngine() {
            try? await stopped.get()
            await withCheckedContinuation { continuation in hub.afterPendingEvents { continuation.resume() } }
        }
    }

    /// Stops the engine when running; returns the future of the release, or `nil` when not running.
    func stopEngine() -> EventLoopFuture<Void>? {
        guard
            let current = engine.withLockedValue({ engine -> Engine? in
                defer { engine = nil }
                return engine
            })
        else { return nil }
        let stopped = current.stop()
        stopped.whenComplete { _ in self.hub.emit(.stopped) }
        return stopped
    }

    var currentEngine: Engine? { engine.withLockedValue { $0 } }

    // MARK: - Peers

    /// Every app currently advertised or connected, sorted by name.
    ///
    /// Tools (peers that only dial: `Peer.Role.tool`) are left out unless
    /// ``Configuration/includesTools`` is set.
    ///
    /// ```swift
    /// for peer in transceiver.availablePeers where !peer.isConnected { print("\(peer.name) is not connected yet") }
    /// ```
    public var availablePeers: [Peer] { currentEngine?.availablePeers ?? [] }

    /// The apps with an established connection, sorted by name (tools as in ``availablePeers``).
    ///
    /// ```swift
    /// print("\(transceiver.connectedPeers.count) peers connected")
    /// ```
    public var connectedPeers: [Peer] { availablePeers.filter(\.isConnected) }

    /// A new subscription to the events from now on, in order: peers coming and going, refusals, messages nobody
    /// handles, errors. Each call makes a stream of its own (every subscriber gets every event); it ends when the
    /// task iterating it is cancelled, or when the transceiver is gone.
    ///
    /// ```swift
    /// let events = transceiver.makeEvents()   // subscribe before start(), to miss nothing
    /// try await transceiver.start()
    /// for await event in events {
    ///     if case .peerConnected(let peer) = event { print("connected to \(peer.name)") }
    /// }
    /// ```
    ///
    /// A peer's ``TransceiverEvent/peerConnected(_:)`` is yielded to every stream before any message of that peer
    /// reaches a handler or a message sequence.
    public func makeEvents() -> AsyncStream<TransceiverEvent> { hub.makeStream() }

    /// Connects to a peer at a known address, without discovery (for hosts where multicast does not reach).
    ///
    /// ```swift
    /// let peer = try await transceiver.connect(host: "10.0.0.7", port: 7000)
    /// try await transceiver.send(ChatLine(text: "hello"), to: peer)
    /// ```
    ///
    /// - Returns: the peer, once the handshake completed.
    /// - Throws: ``/ChirpSupport/ChirpError/Code/notRunning``, or the connection or handshake error.
    @discardableResult
    public func connect(host: String, port: Int) async throws -> Peer {
        guard let engine = currentEngine else { throw ChirpError.notRunning }
        let connection: PeerConnection
        do {
            connection = try await engine.connect(host: host, port: port, dialedPeerID: nil, peerHost: host).get()
        } catch let error as NIOConnectionError {
            throw ChirpError.connectionFailed(address: "\(host):\(port)", reason: Self.reason(for: error), cause: error)
        } catch ChannelError.connectTimeout {
            throw ChirpError.connectionFailed(address: "\(host):\(port)", reason: "timed out")
        }
        return connection.peer
    }

    /// Why a TCP connection could not be made, in words (the errno of the first address tried that has one).
    static func reason(for error: NIOConnectionError) -> String {
        if error.dnsAAAAError != nil && error.dnsAError != nil && error.connectionErrors.isEmpty {
            return "cannot resolve the host name"
        }
        for failure in error.connectionErrors {
            if let io = failure.error as? IOError {
                switch io.errnoCode {
                case ECONNREFUSED: return "connection refused"
                case ETIMEDOUT: return "timed out"
                case EHOSTUNREACH, ENETUNREACH: return "host unreachable"
                default: return String(cString: strerror(io.errnoCode)).lowercased()
                }
            }
            if case ChannelError.connectTimeout = failure.error { return "timed out" }
        }
        return error.connectionErrors.isEmpty ? "no address to connect to" : "\(error.connectionErrors[0].error)"
    }
}
