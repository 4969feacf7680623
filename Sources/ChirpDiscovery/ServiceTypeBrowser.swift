import ChirpSupport
import Dispatch
import Logging

/// A service type seen on the network through DNS-SD service-type enumeration (RFC 6763 section 9).
public struct DiscoveredServiceType: Sendable, Hashable, CustomStringConvertible {
    /// The bare service name without underscore, e.g. `chat` for `_chat._tcp`.
    public var name: String
    /// The transport label without underscore: `tcp` or `udp`.
    public var transport: String

    /// Creates a value from its parts.
    public init(name: String, transport: String) {
        self.name = name
        self.transport = transport
    }

    /// The registration type as DNS-SD writes it, e.g. `_chat._tcp`.
    public var registrationType: String { "_\(name)._\(transport)" }

    /// The type as a Chirp ``ServiceType``, when it is a TCP type whose name follows the RFC 6763 rules (every Chirp
    /// peer's type does); `nil` otherwise.
    public var serviceType: ServiceType? {
        transport == "tcp" ? try? ServiceType(name) : nil
    }

    /// The registration type, e.g. `_chat._tcp`.
    public var description: String { registrationType }

    /// Parses what a `_services._dns-sd._udp` browse reports: the instance name is the service (`_chat`) and the type
    /// holds the transport, possibly followed by the domain (`_tcp.` on Avahi, `_tcp.local.` on Bonjour).
    init?(instanceName: String, type: String) {
        let service = instanceName.hasPrefix("_") ? String(instanceName.dropFirst()) : instanceName
        guard let label = type.split(separator: ".").first, label.hasPrefix("_"), label.count > 1, !service.isEmpty
        else { return nil }
        self.init(name: service, transport: String(label.dropFirst()))
    }
}

/// What a ``ServiceTypeBrowser`` reports.
public enum ServiceTypeBrowserEvent: Sendable {
    /// A service type is advertised by at least one instance.
    case found(DiscoveredServiceType)
    /// No instance advertises the type any more.
    case lost(DiscoveredServiceType)
    /// No DNS-SD daemon answers; the message says what to start. Browsing retries by itself.
    case unavailable(String)
}

/// Lists the service types advertised on the network (DNS-SD service-type enumeration: a browse of
/// `_services._dns-sd._udp`), without joining any of them: what `chirp browse` shows when given no type.
///
/// Works with Bonjour, with Avahi's own client library and with its Bonjour compatibility layer (checked with
/// Avahi 0.8).
///
/// ```swift
/// for await event in ServiceTypeBrowser().events() {
///     if case .found(let type) = event { print(type.registrationType) }
/// }
/// ```
public struct ServiceTypeBrowser: Sendable {
    private let scope: BrowseScope

    /// A browser for `domain` on `interface`, through `backend`; `logger` gets its problems (default: nothing is
    /// logged).
    public init(
        domain: String = "local.", interface: NetworkInterface = .any,
        backend: DiscoveryBackend = .automatic, logger: Logger = .chirpSilent
    ) {
        scope = BrowseScope(domain: domain, interface: interface, backend: backend, logger: logger)
    }

    /// Starts browsing; stops (and releases its DNS-SD reference) when the iterating task ends or is cancelled.
    public func events() -> AsyncStream<ServiceTypeBrowserEvent> {
        scope.events { scope, report in
            let enumeration = ServiceTypeEnumeration(
                domain: scope.domain, interfaceIndex: scope.interface.index, backend: scope.backend.implementation,
                logger: scope.logger, handler: report)
            return (start: { enumeration.start() }, stop: { enumeration.stop() })
        }
    }
}

/// The DNS-SD side of ``ServiceTypeBrowser``: one browse of `_services._dns-sd._udp` on a private serial queue,
/// restarted with backoff while the daemon does not answer.
final class ServiceTypeEnumeration: @unchecked Sendable {
    /// The meta-query type of RFC 6763 section 9.
    static let metaQueryType = "_services._dns-sd._udp"

    private let queue = DispatchQueue(label: "chirp.discovery.service-types")
    private let domain: String
    private let interfaceIndex: UInt32
    private let logger: Logger
    private let backend: any Discovery
    private let handler: @Sendable (ServiceTypeBrowserEvent) -> Void

    // Touched on `queue` only.
    private var running = false
    private var browser: (any DiscoveryOperation)?
    /// Every type seen, with the interfaces it is seen on.
    private var types: [DiscoveredServiceType: Set<UInt32>] = [:]
    private var retry = DaemonRetry()

    init(
        domain: String, interfaceIndex: UInt32, backend: any Discovery = DNSSDDiscovery(), logger: Logger,
        handler: @escaping @Sendable (ServiceTypeBrowserEvent) -> Void
    ) {
        self.backend = backend
        self.domain = domain
        self.interfaceIndex = interfaceIndex
        self.logger = logger
        self.handler = handler
    }

    func start() {
        queue.async {
            guard !self.running else { return }
            self.running = true
            self.attemptStart()
        }
    }

    func stop() {
        queue.async {
            self.running = false
            self.tearDown(reportLost: false)
        }
    }

    private func attemptStart() {
        guard running else { return }
        do {
            browser = try backend.browse(
                type: Self.metaQueryType, domain: domain, interfaceIndex: interfaceIndex, queue: queue, releases: nil
            ) { [unowned self] event in self.handle(event) }
            retry.succeeded()
        } catch let error as DNSSDError {
            fail(error)
        } catch {
            fail(DNSSDError(code: -65537, operation: "DNSServiceBrowse"))
        }
    }

    private func fail(_ error: DNSSDError) {
        tearDown(reportLost: true)
        guard running else { return }
        let metadata: Logger.Metadata = ["browse": "\(Self.metaQueryType)"]
        let restart: @Sendable () -> Void = { [weak self] in self?.attemptStart() }
        if retry.failed(error, on: queue, logger: logger, metadata: metadata, restart: restart) {
            handler(.unavailable(error.description))
        }
    }

    private func tearDown(reportLost: Bool) {
        retry.cancel()
        browser?.cancel()
        browser = nil
        if reportLost { for type in types.keys { handler(.lost(type)) } }
        types = [:]
    }

    private func handle(_ event: BrowseEvent) {
        switch event {
        case .added(let name, let type, _, let interface):
            guard let found = DiscoveredServiceType(instanceName: name, type: type) else {
                logger.debug(
                    "skipping an unreadable service-type record",
                    metadata: ["name": "\(UntrustedText.escaped(name))", "type": "\(UntrustedText.escaped(type))"])
                return
            }
            let isNew = types[found] == nil
            types[found, default: []].insert(interface)
            if isNew { handler(.found(found)) }
        case .removed(let name, let type, _, let interface):
            guard let lost = DiscoveredServiceType(instanceName: name, type: type), var interfaces = types[lost] else {
                return
            }
            interfaces.remove(interface)
            if interfaces.isEmpty {
                types[lost] = nil
                handler(.lost(lost))
            } else {
                types[lost] = interfaces
            }
        case .failed(let error):
            fail(error)
        }
    }
}
