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
    /// The host's addresses found (IPv4 and/or IPv6), in the order a peer dials them: IPv4, then global IPv6, then
    /// link-local IPv6 with the interface of its scope (`fe80::1%eth0`).
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
    private let scope: BrowseScope

    /// A browser for the peers of `serviceType` in `domain` on `interface`, through `backend`; `logger` gets its
    /// problems (default: nothing is logged).
    ///
    /// - Throws: ``/ChirpSupport/ChirpError/Code/invalidServiceType``.
    public init(
        serviceType: String, domain: String = "local.", interface: NetworkInterface = .any,
        backend: DiscoveryBackend = .automatic, logger: Logger = .chirpSilent
    ) throws {
        self.serviceType = try ServiceType(serviceType)
        scope = BrowseScope(domain: domain, interface: interface, backend: backend, logger: logger)
    }

    /// Starts browsing; stops (and releases its DNS-SD references) when the iterating task ends or is cancelled.
    public func events() -> AsyncStream<ServiceBrowserEvent> {
        scope.events { scope, report in
            let discovery = ServiceDiscovery(
                serviceType: serviceType, domain: scope.domain, interfaceIndex: scope.interface.index,
                advertisement: nil, backend: scope.backend.implementation, logger: scope.logger
            ) { event in
                switch event {
                case .found(let service): report(.found(ServiceInstance(service)))
                case .lost(let name): report(.lost(instanceName: name))
                case .unavailable(let message): report(.unavailable(message))
                case .advertised, .sighted: break
                }
            }
            return (start: { discovery.start() }, stop: { discovery.stop() })
        }
    }
}

/// What both browsers (``ServiceBrowser``, ``ServiceTypeBrowser``) are given: where to browse, through which
/// backend, and the logger for their problems.
struct BrowseScope: Sendable {
    var domain: String
    var interface: NetworkInterface
    var backend: DiscoveryBackend
    var logger: Logger

    /// What an operation reports, as a stream. `make` builds the operation around the handler it is given and
    /// returns how to start and stop it: it starts now, and stops (releasing its DNS-SD references) when the iterating
    /// task ends or is cancelled.
    func events<Event: Sendable>(
        _ make: (BrowseScope, @escaping @Sendable (Event) -> Void) -> (start: () -> Void, stop: @Sendable () -> Void)
    ) -> AsyncStream<Event> {
        let (stream, continuation) = AsyncStream.makeStream(of: Event.self)
        let (start, stop) = make(self) { continuation.yield($0) }
        continuation.onTermination = { _ in stop() }
        start()
        return stream
    }
}
