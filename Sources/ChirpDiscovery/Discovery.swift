import Dispatch

/// One running discovery operation (a registration, a browse, a resolve or an address query) of a ``Discovery``
/// backend. Created, used and cancelled on the serial queue it was started with; its events arrive there.
protocol DiscoveryOperation: AnyObject {
    /// Stops the operation and releases what it holds. Idempotent; no event is delivered after it returns.
    func cancel()
}

extension DNSServiceOperation: DiscoveryOperation {}

/// The four calls of a DNS-SD implementation that ``ServiceDiscovery`` and ``ServiceTypeEnumeration`` make.
///
/// Two backends: ``DNSSDDiscovery`` (the `dns_sd.h` API: Bonjour on macOS, Avahi's compatibility library on Linux)
/// and, on Linux, ``AvahiDiscovery`` (Avahi's own client library: one D-Bus connection per process, and resolves
/// that return the address). ``Configuration/DiscoveryBackend`` picks one. Every call is made on `queue`, and
/// every event is delivered there; `releases` is entered while the operation holds daemon resources, so that a
/// caller can wait for them to be released.
protocol Discovery: Sendable {
    /// Advertises a service instance; reports the name it got (it may change after a conflict).
    func register(
        name: String, type: String, domain: String?, interfaceIndex: UInt32, port: UInt16, txt: TXTRecord,
        queue: DispatchQueue, releases: DispatchGroup?, handler: @escaping (RegisterEvent) -> Void
    ) throws -> any DiscoveryOperation

    /// Browses a service type (or, for ``ServiceTypeEnumeration/metaQueryType``, the service types).
    func browse(
        type: String, domain: String?, interfaceIndex: UInt32, queue: DispatchQueue, releases: DispatchGroup?,
        handler: @escaping (BrowseEvent) -> Void
    ) throws -> any DiscoveryOperation

    /// Resolves an instance reported by ``browse(type:domain:interfaceIndex:queue:releases:handler:)`` to its host,
    /// port and TXT record, and, when the backend can, its addresses.
    func resolve(
        name: String, type: String, domain: String, interfaceIndex: UInt32, queue: DispatchQueue,
        releases: DispatchGroup?, handler: @escaping (ResolveEvent) -> Void
    ) throws -> any DiscoveryOperation

    /// Queries the IPv4 (`ipv6: false`) or IPv6 addresses of `host`.
    func queryAddress(
        host: String, ipv6: Bool, interfaceIndex: UInt32, queue: DispatchQueue, releases: DispatchGroup?,
        handler: @escaping (AddressEvent) -> Void
    ) throws -> any DiscoveryOperation

    /// Starts connecting to the daemon in the background, when the backend keeps a connection, so that the first
    /// operation finds it ready (a transceiver calls it before it opens its listener). Returns at once.
    func prepare()
}

extension Discovery {
    func prepare() {}
}

/// The `dns_sd.h` backend: Bonjour on macOS, Avahi's Bonjour compatibility library on Linux (where each operation
/// is a D-Bus connection of its own, and a resolve is followed by address queries).
struct DNSSDDiscovery: Discovery {
    func register(
        name: String, type: String, domain: String?, interfaceIndex: UInt32, port: UInt16, txt: TXTRecord,
        queue: DispatchQueue, releases: DispatchGroup?, handler: @escaping (RegisterEvent) -> Void
    ) throws -> any DiscoveryOperation {
        try DNSService.register(
            name: name, type: type, domain: domain, interfaceIndex: interfaceIndex, port: port, txt: txt, queue: queue,
            releases: releases, handler: handler)
    }

    func browse(
        type: String, domain: String?, interfaceIndex: UInt32, queue: DispatchQueue, releases: DispatchGroup?,
        handler: @escaping (BrowseEvent) -> Void
    ) throws -> any DiscoveryOperation {
        try DNSService.browse(
            type: type, domain: domain, interfaceIndex: interfaceIndex, queue: queue, releases: releases,
            handler: handler)
    }

    func resolve(
        name: String, type: String, domain: String, interfaceIndex: UInt32, queue: DispatchQueue,
        releases: DispatchGroup?, handler: @escaping (ResolveEvent) -> Void
    ) throws -> any DiscoveryOperation {
        try DNSService.resolve(
            name: name, type: type, domain: domain, interfaceIndex: interfaceIndex, queue: queue, releases: releases,
            handler: handler)
    }

    func queryAddress(
        host: String, ipv6: Bool, interfaceIndex: UInt32, queue: DispatchQueue, releases: DispatchGroup?,
        handler: @escaping (AddressEvent) -> Void
    ) throws -> any DiscoveryOperation {
        try DNSService.queryAddress(
            host: host, ipv6: ipv6, interfaceIndex: interfaceIndex, queue: queue, releases: releases, handler: handler)
    }
}
