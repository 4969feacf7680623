import ChirpSupport
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// Finds the other peers of a service type on the network, connects to each of them, and exchanges typed messages.
///
/// ```swift
/// struct ChatLine: Codable, Sendable { var text: String }
///
/// let transceiver = Transceiver(serviceType: "chat")
/// transceiver.receive(ChatLine.self) { line, sender in
///     print("[\(sender.name)] \(line.text)")
/// }
/// try transceiver.resume()
/// try transceiver.broadcast(ChatLine(text: "hello"))
/// ```
///
/// A transceiver advertises itself through the platform's DNS-SD daemon (Avahi on Linux, Bonjour on macOS), browses
/// for peers of the same type, and keeps exactly one TCP connection to each. Handlers and callbacks can be set at any
/// time; `resume()` and `stop()` can be called any number of times.
public final class Transceiver: Sendable {
    /// The configuration this transceiver was created with.
    public let configuration: Configuration

    let router = Router()
    let hub = EventHub()
    private let engine = NIOLockedValueBox<Engine?>(nil)

    /// Creates a transceiver; nothing happens on the network until `resume()` (or ``start()``).
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// Creates a transceiver for `serviceType` with every other setting at its default.
    public convenience init(serviceType: String) {
        self.init(configuration: Configuration(serviceType: serviceType))
    }

    /// This peer as others see it.
    public var localPeer: Peer {
        Peer(
            id: configuration.peerID, name: configuration.peerName, metadata: configuration.metadata, isConnected: true)
    }

    /// Whether `resume()` (or ``start()``) was called and `stop()` (or ``shutdown()``) was not called since.
    public var isRunning: Bool { engine.withLockedValue { $0 != nil } }

    /// The TCP port this transceiver listens on, once listening.
    public var port: Int? { engine.withLockedValue { $0 }?.port }

    // MARK: - Lifecycle

    /// Starts listening, advertising and browsing. Returns at once; does nothing if already running.
    ///
    /// This is MultipeerKit's `resume()`. To wait until the listener is open (and learn if it could not be), use
    /// ``start()`` instead.
    ///
    /// - Throws: ``ChirpError/Code/invalidServiceType`` or ``ChirpError/Code/invalidConfiguration`` when the
    ///   configuration is not valid. Problems found later (no DNS-SD daemon, a port in use) are logged and reported
    ///   as events; discovery retries by itself until the daemon answers.
    public func resume() throws {
        _ = try startEngine()
    }

    /// Starts listening, advertising and browsing, and returns once the listener is open; does nothing if already
    /// running.
    ///
    /// ```swift
    /// let transceiver = Transceiver(serviceType: "chat")
    /// try await transceiver.start()
    /// print("listening on port \(transceiver.port ?? 0)")
    /// await transceiver.shutdown()
    /// ```
    ///
    /// The waiting forms have names of their own (`start()` and ``shutdown()``, beside `resume()` and `stop()`,
    /// which return at once): top-level code in `main.swift` would otherwise pick the synchronous overload of a name
    /// shared by both, and `try await transceiver.start()` would not wait.
    ///
    /// - Throws: a configuration error, or ``ChirpError/Code/listenFailed`` when the port cannot be opened.
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

    /// The waiting form of `resume()`, under its old name.
    @available(*, deprecated, renamed: "start()", message: "use start(), which waits; resume() returns at once")
    public func resume() async throws {
        try await start()
    }

    private func startEngine() throws -> EventLoopFuture<Int>? {
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

    /// Says goodbye to every peer and releases every socket, DNS-SD reference and timer. Returns at once; the
    /// release completes in the background. Use ``shutdown()`` to wait for it.
    public func stop() {
        _ = stopEngine()
    }

    /// Says goodbye to every peer, releases every socket, DNS-SD reference and timer, and returns once they are
    /// released and every event up to ``TransceiverEvent/stopped`` was delivered. Does nothing if not running.
    public func shutdown() async {
        if let stopped = stopEngine() {
            try? await stopped.get()
            await withCheckedContinuation { continuation in hub.afterPendingEvents { continuation.resume() } }
        }
    }

    /// The waiting form of `stop()`, under its old name.
    @available(*, deprecated, renamed: "shutdown()", message: "use shutdown(), which waits; stop() returns at once")
    public func stop() async {
        await shutdown()
    }

    private func stopEngine() -> EventLoopFuture<Void>? {
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

    /// Every peer currently advertised or connected, sorted by name.
    public var availablePeers: [Peer] { currentEngine?.availablePeers ?? [] }

    /// The peers with an established connection, sorted by name.
    public var connectedPeers: [Peer] { availablePeers.filter(\.isConnected) }

    /// A new subscription to the events from now on, in order: peers coming and going, refusals, errors. Each call
    /// makes a stream of its own (every subscriber gets every event); it ends when the task iterating it is
    /// cancelled, or when the transceiver is gone.
    ///
    /// ```swift
    /// let events = transceiver.makeEvents()   // subscribe before start(), to miss nothing
    /// try await transceiver.start()
    /// for await event in events {
    ///     if case .peerConnected(let peer) = event { print("connected to \(peer.name)") }
    /// }
    /// ```
    public func makeEvents() -> AsyncStream<TransceiverEvent> { hub.makeStream() }

    /// A new subscription to the events, made at each access: ``makeEvents()`` says so.
    @available(
        *, deprecated, renamed: "makeEvents()", message: "each access makes a new subscription: call makeEvents()"
    )
    public var events: AsyncStream<TransceiverEvent> { hub.makeStream() }

    /// Called (on an internal serial queue) with the new list whenever the available peers change.
    public var availablePeersDidChange: (@Sendable ([Peer]) -> Void)? {
        get { hub.callbacks.availablePeersDidChange }
        set { hub.updateCallbacks { $0.availablePeersDidChange = newValue } }
    }

    /// Called when a peer is discovered.
    public var peerAdded: (@Sendable (Peer) -> Void)? {
        get { hub.callbacks.peerAdded }
        set { hub.updateCallbacks { $0.peerAdded = newValue } }
    }

    /// Called when a peer is gone: no longer advertised and not connected.
    public var peerRemoved: (@Sendable (Peer) -> Void)? {
        get { hub.callbacks.peerRemoved }
        set { hub.updateCallbacks { $0.peerRemoved = newValue } }
    }

    /// Called when a connection to a peer is established.
    public var peerConnected: (@Sendable (Peer) -> Void)? {
        get { hub.callbacks.peerConnected }
        set { hub.updateCallbacks { $0.peerConnected = newValue } }
    }

    /// Called when the connection to a peer is lost (closed, or no heartbeat within the timeout).
    public var peerDisconnected: (@Sendable (Peer) -> Void)? {
        get { hub.callbacks.peerDisconnected }
        set { hub.updateCallbacks { $0.peerDisconnected = newValue } }
    }

    /// Connects to a peer at a known address, without discovery (for hosts where multicast does not reach).
    ///
    /// - Returns: the peer, once the handshake completed.
    /// - Throws: ``ChirpError/Code/notRunning``, or the connection or handshake error.
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
