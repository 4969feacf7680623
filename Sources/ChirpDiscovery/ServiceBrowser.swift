import ChirpSupport
import Logging

/// A service instance found on the network, as DNS-SD describes it: what `chirp browse` shows.
public struct ServiceInstance: Sendable, Hashable {
    /// The DNS-SD instance name, unique on the network.
    public var instanceName: String
    /// The target host name, e.g. `myhost.local.`.
    public var host: String
    /// The TCP port.
    public var port: Int
    /// The host's addresses found (IPv4 and/or IPv6).
    public var addresses: [String]
    /// The whole TXT record, Chirp's own keys included.
    public var txt: [String: String]

    /// The Chirp peer id, when the instance is a Chirp peer.
    public var peerID: String? { txt[TXTRecord.ReservedKey.peerID] }
    /// The display name, when the instance is a Chirp peer; otherwise the instance name.
    public var name: String { txt[TXTRecord.ReservedKey.name] ?? instanceName }
    /// The Chirp protocol version it speaks, if it is a Chirp peer.
    public var protocolVersion: Int? { txt[TXTRecord.ReservedKey.protocolVersion].flatMap(Int.init) }
    /// Whether it says it requires a shared secret.
    public var requiresSecret: Bool { txt[TXTRecord.ReservedKey.secure] == "1" }
    /// The user metadata: the TXT record without Chirp's own keys.
    public var metadata: [String: String] {
        txt.filter { !TXTRecord.ReservedKey.all.contains($0.key) }
    }

    init(_ service: DiscoveredService) {
        instanceName = service.instanceName
        host = service.host
        port = Int(service.port)
        addresses = service.addresses
        txt = service.txt.dictionary
    }
}

/// What a ``ServiceBrowser`` reports.
public enum ServiceBrowserEvent: Sendable {
    /// An instance appeared and was resolved.
    case found(ServiceInstance)
    /// An instance is gone.
    case lost(instanceName: String)
    /// No DNS-SD daemon answers; the message says what to start. Browsing retries by itself.
    case unavailable(String)
}

/// Watches the instances of one service type without joining it: no advertisement, no connections.
///
/// ```swift
/// let browser = try ServiceBrowser(serviceType: "chat")
/// for await event in browser.events() {
///     if case .found(let instance) = event { print(instance.name, instance.addresses) }
/// }
/// ```
public struct ServiceBrowser: Sendable {
    /// The service type browsed.
    public let serviceType: ServiceType
    private let domain: String
    private let interface: NetworkInterface
    private let backend: DiscoveryBackend
    private let logger: Logger

    /// A browser for the peers of `serviceType` in `domain` on `interface`, through `backend`; `logger` gets its
    /// problems (default: nothing is logged).
    ///
    /// - Throws: ``/ChirpSupport/ChirpError/Code/invalidServiceType``.
    public init(
        serviceType: String, domain: String = "local.", interface: NetworkInterface = .any,
        backend: DiscoveryBackend = .automatic, logger: Logger = .chirpSilent
    ) throws {
        self.serviceType = try ServiceType(serviceType)
        self.domain = domain
        self.interface = interface
        self.backend = backend
        self.logger = logger
    }

    /// Starts browsing; stops (and releases its DNS-SD references) when the iterating task ends or is cancelled.
    public func events() -> AsyncStream<ServiceBrowserEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: ServiceBrowserEvent.self)
        let discovery = ServiceDiscovery(
            serviceType: serviceType, domain: domain, interfaceIndex: interface.index, advertisement: nil,
            backend: backend.implementation, logger: logger
        ) { event in
            switch event {
            case .found(let service): continuation.yield(.found(ServiceInstance(service)))
            case .lost(let name): continuation.yield(.lost(instanceName: name))
            case .unavailable(let message): continuation.yield(.unavailable(message))
            case .advertised, .sighted: break
            }
        }
        continuation.onTermination = { _ in discovery.stop() }
        discovery.start()
        return stream
    }
}
