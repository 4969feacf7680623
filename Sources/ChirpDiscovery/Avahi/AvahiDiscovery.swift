#if canImport(CAvahiClient)
import CAvahiClient
import Dispatch

/// The native Avahi backend (Linux): entry groups, service browsers and service resolvers on the process's one
/// ``AvahiDaemonClient``. A resolve returns the address with the port and TXT record, so no address query follows.
struct AvahiDiscovery: Discovery {
    /// Whether the backend can run here (its poll thread started).
    static var isAvailable: Bool { AvahiDaemonClient.shared != nil }

    /// The backend, when available.
    static var implementation: (any Discovery)? { AvahiDaemonClient.shared.map { AvahiDiscovery(daemon: $0) } }

    let daemon: AvahiDaemonClient

    func prepare() {
        daemon.connectInBackground()
    }

    func register(
        name: String, type: String, domain: String?, interfaceIndex: UInt32, port: UInt16, txt: TXTRecord,
        queue: DispatchQueue, releases: DispatchGroup?, handler: @escaping (RegisterEvent) -> Void
    ) throws -> any DiscoveryOperation {
        let sink = AvahiRegistration(
            name: name, type: type, domain: domain, interface: Self.avahiInterface(interfaceIndex), port: port,
            txt: txt.bytes, daemon: daemon, queue: queue, deliver: handler)
        try sink.start(operation: "avahi_entry_group_new", releases: releases) { client, userdata in
            guard
                let group = avahi_entry_group_new(
                    client,
                    { group, state, userdata in
                        guard let group, let userdata else { return }
                        Unmanaged<AvahiRegistration>.fromOpaque(userdata).takeUnretainedValue().stateChanged(
                            state, group: group)
                    }, userdata)
            else { return nil }
            let status = sink.addService(to: group)
            guard status == 0 else {
                avahi_entry_group_free(group)
                return nil
            }
            return group
        }
        return sink
    }

    func browse(
        type: String, domain: String?, interfaceIndex: UInt32, queue: DispatchQueue, releases: DispatchGroup?,
        handler: @escaping (BrowseEvent) -> Void
    ) throws -> any DiscoveryOperation {
        let interface = Self.avahiInterface(interfaceIndex)
        if type == ServiceTypeEnumeration.metaQueryType {
            let sink = AvahiTypeBrowse(
                daemon: daemon, queue: queue, deliver: handler, free: { avahi_service_type_browser_free($0) })
            try sink.start(operation: "avahi_service_type_browser_new", releases: releases) { client, userdata in
                avahi_service_type_browser_new(
                    client, interface, AvahiProtocol(AVAHI_PROTO_UNSPEC), domain, AvahiLookupFlags(0),
                    {
                        _, interface, protocolFamily, event, type, domain, _, userdata in
                        guard let userdata else { return }
                        Unmanaged<AvahiTypeBrowse>.fromOpaque(userdata).takeUnretainedValue().browsed(
                            event, interface: interface, protocolFamily: protocolFamily, type: type, domain: domain)
                    }, userdata)
            }
            return sink
        }
        let sink = AvahiBrowse(daemon: daemon, queue: queue, deliver: handler, free: { avahi_service_browser_free($0) })
        try sink.start(operation: "avahi_service_browser_new", releases: releases) { client, userdata in
            avahi_service_browser_new(
                client, interface, AvahiProtocol(AVAHI_PROTO_UNSPEC), type, domain, AvahiLookupFlags(0),
                {
                    _, interface, protocolFamily, event, name, type, domain, _, userdata in
                    guard let userdata else { return }
                    Unmanaged<AvahiBrowse>.fromOpaque(userdata).takeUnretainedValue().browsed(
                        event, interface: interface, protocolFamily: protocolFamily, name: name, type: type,
                        domain: domain)
                }, userdata)
        }
        return sink
    }

    func resolve(
        name: String, type: String, domain: String, interfaceIndex: UInt32, queue: DispatchQueue,
        releases: DispatchGroup?, handler: @escaping (ResolveEvent) -> Void
    ) throws -> any DiscoveryOperation {
        let sink = AvahiResolve(
            name: name, type: type, domain: domain, interface: Self.avahiInterface(interfaceIndex), daemon: daemon,
            queue: queue, deliver: handler)
        try sink.start(operation: "avahi_service_resolver_new", releases: releases) { client, userdata in
            sink.makeResolver(client: client, userdata: userdata)
        }
        return sink
    }

    func queryAddress(
        host: String, ipv6: Bool, interfaceIndex: UInt32, queue: DispatchQueue, releases: DispatchGroup?,
        handler: @escaping (AddressEvent) -> Void
    ) throws -> any DiscoveryOperation {
        let sink = AvahiSink<AddressEvent>(
            daemon: daemon, queue: queue, deliver: handler, free: { avahi_host_name_resolver_free($0) })
        let interface = Self.avahiInterface(interfaceIndex)
        try sink.start(operation: "avahi_host_name_resolver_new", releases: releases) { client, userdata in
            avahi_host_name_resolver_new(
                client, interface, AvahiProtocol(AVAHI_PROTO_UNSPEC), host,
                ipv6 ? AvahiProtocol(AVAHI_PROTO_INET6) : AvahiProtocol(AVAHI_PROTO_INET), AvahiLookupFlags(0),
                { _, interface, _, event, _, address, _, userdata in
                    guard let userdata else { return }
                    let sink = Unmanaged<AvahiSink<AddressEvent>>.fromOpaque(userdata).takeUnretainedValue()
                    if event == AVAHI_RESOLVER_FOUND, let address {
                        sink.send(.address(AvahiDiscovery.text(of: address), interfaceIndex: UInt32(max(interface, 0))))
                    } else {
                        sink.send(.failed(sink.daemon.lastErrorLocked(operation: "avahi_host_name_resolver")))
                    }
                }, userdata)
        }
        return sink
    }

    /// The `dns_sd` interface index (0: all) as Avahi's (`AVAHI_IF_UNSPEC`: all).
    static func avahiInterface(_ index: UInt32) -> AvahiIfIndex {
        index == 0 ? AvahiIfIndex(AVAHI_IF_UNSPEC) : AvahiIfIndex(index)
    }

    /// An address as text (`192.168.1.2`, `fe80::1`).
    static func text(of address: UnsafePointer<AvahiAddress>) -> String {
        var buffer = [CChar](repeating: 0, count: Int(AVAHI_ADDRESS_STR_MAX))
        avahi_address_snprint(&buffer, buffer.count, address)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A TXT record's string list in DNS wire format (what ``TXTRecord`` reads).
    static func wireBytes(of list: UnsafeMutablePointer<AvahiStringList>?) -> [UInt8] {
        guard let list else { return [] }
        var size = 0
        var node: UnsafeMutablePointer<AvahiStringList>? = list
        while let current = node {
            size += min(avahi_string_list_get_size(current), 255) + 1
            node = avahi_string_list_get_next(current)
        }
        var bytes = [UInt8](repeating: 0, count: size)
        let written = bytes.withUnsafeMutableBytes { avahi_string_list_serialize(list, $0.baseAddress, size) }
        return Array(bytes.prefix(written))
    }
}

/// One Avahi object and the serial queue its events go to: the `userdata` of its C callbacks.
///
/// `cancelled` is touched on `queue`; `object`, `generation` and `watcher` with the poll's lock held (creation,
/// callbacks, ``cancel()``): hence `@unchecked Sendable`, for the hop from the poll thread to `queue`.
class AvahiSink<Event: DNSSDFailureRepresentable & Sendable>: DiscoveryOperation, @unchecked Sendable {
    let daemon: AvahiDaemonClient
    private let queue: DispatchQueue
    private let deliver: (Event) -> Void
    private let free: (OpaquePointer) -> Void
    private var cancelled = false
    var object: OpaquePointer?
    private var generation: UInt64 = 0
    private var watcher: UInt64?
    private var releases: DispatchGroup?
    private var retained: Unmanaged<AvahiSink<Event>>?

    init(
        daemon: AvahiDaemonClient, queue: DispatchQueue, deliver: @escaping (Event) -> Void,
        free: @escaping (OpaquePointer) -> Void
    ) {
        self.daemon = daemon
        self.queue = queue
        self.deliver = deliver
        self.free = free
    }

    /// Creates the object with `create` (given the client and this sink as `userdata`), on `queue`.
    func start(
        operation: String, releases: DispatchGroup?,
        _ create: (OpaquePointer, UnsafeMutableRawPointer) -> OpaquePointer?
    ) throws {
        dispatchPrecondition(condition: .onQueue(queue))
        let retained = Unmanaged.passRetained(self)
        do {
            try daemon.withClient(operation: operation) { client in
                guard let object = create(client, retained.toOpaque()) else {
                    throw daemon.lastErrorLocked(operation: operation)
                }
                self.object = object
                generation = daemon.generationLocked
                watcher = daemon.watchLocked { [self] error in send(.failure(error)) }
            }
        } catch {
            retained.release()
            throw error
        }
        self.retained = retained
        self.releases = releases
        releases?.enter()
    }

    /// Hands `event` to the owner on its queue, unless cancelled by then. From the poll thread.
    func send(_ event: Event) {
        queue.async { [self] in
            guard !cancelled else { return }
            deliver(event)
        }
    }

    /// Frees the Avahi object (unless the client it was made on is gone, and it with it); no event is delivered
    /// afterwards. On `queue`; idempotent.
    func cancel() {
        guard !cancelled else { return }
        cancelled = true
        daemon.withLock {
            if let object, generation == daemon.generationLocked { free(object) }
            object = nil
            if let watcher { daemon.unwatchLocked(watcher) }
            watcher = nil
        }
        retained?.release()
        retained = nil
        releases?.leave()
        releases = nil
    }
}

/// A registration: an entry group with one service, renamed and registered again on a name conflict.
final class AvahiRegistration: AvahiSink<RegisterEvent>, @unchecked Sendable {
    /// The name being registered (changes on a conflict). Under the poll's lock.
    private var name: String
    private let type: String
    private let domain: String?
    private let interface: AvahiIfIndex
    private let port: UInt16
    private let txt: [UInt8]

    init(
        name: String, type: String, domain: String?, interface: AvahiIfIndex, port: UInt16, txt: [UInt8],
        daemon: AvahiDaemonClient, queue: DispatchQueue, deliver: @escaping (RegisterEvent) -> Void
    ) {
        self.name = name
        self.type = type
        self.domain = domain
        self.interface = interface
        self.port = port
        self.txt = txt
        super.init(daemon: daemon, queue: queue, deliver: deliver, free: { avahi_entry_group_free($0) })
    }

    /// Adds the service under the current name and commits the group; Avahi's status (0 on success).
    func addService(to group: OpaquePointer) -> Int32 {
        var list: UnsafeMutablePointer<AvahiStringList>?
        if !txt.isEmpty {
            let parsed = txt.withUnsafeBytes { avahi_string_list_parse($0.baseAddress, $0.count, &list) }
            if parsed != 0 { return parsed }
        }
        defer { avahi_string_list_free(list) }
        let added = avahi_entry_group_add_service_strlst(
            group, interface, AvahiProtocol(AVAHI_PROTO_UNSPEC), AvahiPublishFlags(0), name, type, domain, nil, port,
            list)
        if added != 0 { return added }
        return avahi_entry_group_commit(group)
    }

    /// On the poll thread (or inside `avahi_entry_group_new`).
    func stateChanged(_ state: AvahiEntryGroupState, group: OpaquePointer) {
        switch state {
        case AVAHI_ENTRY_GROUP_ESTABLISHED:
            send(.registered(name: name))
        case AVAHI_ENTRY_GROUP_COLLISION:
            // Another host has this name: take Avahi's next one ("name #2") and register again.
            guard let alternative = avahi_alternative_service_name(name) else { return }
            name = String(cString: alternative)
            avahi_free(alternative)
            avahi_entry_group_reset(group)
            let status = addService(to: group)
            if status != 0 { send(.failed(DNSSDError(avahiCode: status, operation: "avahi_entry_group_add_service"))) }
        case AVAHI_ENTRY_GROUP_FAILURE:
            send(.failed(daemon.lastErrorLocked(operation: "avahi_entry_group")))
        default:
            break  // uncommitted, registering
        }
    }
}

/// A service browser. Avahi reports an instance once per interface and address family; the `dns_sd` API (and
/// ``ServiceDiscovery``) once per interface: the first family to appear adds it, the last to go removes it.
class AvahiBrowse: AvahiSink<BrowseEvent>, @unchecked Sendable {
    /// The address families each instance is seen with, per interface. On the poll thread only.
    private var families: [String: Set<AvahiProtocol>] = [:]

    func browsed(
        _ event: AvahiBrowserEvent, interface: AvahiIfIndex, protocolFamily: AvahiProtocol,
        name: UnsafePointer<CChar>?, type: UnsafePointer<CChar>?, domain: UnsafePointer<CChar>?
    ) {
        report(
            event, interface: interface, protocolFamily: protocolFamily, name: name.map { String(cString: $0) } ?? "",
            type: type.map { String(cString: $0) } ?? "", domain: domain, operation: "avahi_service_browser")
    }

    /// Reports `name` added when its first address family appears on an interface, removed when its last goes.
    func report(
        _ event: AvahiBrowserEvent, interface: AvahiIfIndex, protocolFamily: AvahiProtocol, name: String, type: String,
        domain: UnsafePointer<CChar>?, operation: String
    ) {
        switch event {
        case AVAHI_BROWSER_NEW, AVAHI_BROWSER_REMOVE:
            let domain = domain.map { String(cString: $0) } ?? ""
            let index = UInt32(max(interface, 0))
            let key = "\(index)/\(name)/\(type)"
            if event == AVAHI_BROWSER_NEW {
                let isNew = families[key]?.isEmpty ?? true
                families[key, default: []].insert(protocolFamily)
                if isNew { send(.added(name: name, type: type, domain: domain, interfaceIndex: index)) }
            } else {
                guard var seen = families[key], seen.remove(protocolFamily) != nil else { return }
                families[key] = seen.isEmpty ? nil : seen
                if seen.isEmpty { send(.removed(name: name, type: type, domain: domain, interfaceIndex: index)) }
            }
        case AVAHI_BROWSER_FAILURE:
            send(.failed(daemon.lastErrorLocked(operation: operation)))
        default:
            break  // all for now, cache exhausted
        }
    }
}

/// A service-type browser, reporting types as a `dns_sd` browse of `_services._dns-sd._udp` does: the service label
/// as the instance name (`_chat`) and the transport as the type (`_tcp`).
final class AvahiTypeBrowse: AvahiBrowse, @unchecked Sendable {
    func browsed(
        _ event: AvahiBrowserEvent, interface: AvahiIfIndex, protocolFamily: AvahiProtocol,
        type: UnsafePointer<CChar>?, domain: UnsafePointer<CChar>?
    ) {
        let labels = (type.map { String(cString: $0) } ?? "").split(separator: ".", maxSplits: 1)
        guard event == AVAHI_BROWSER_FAILURE || labels.count == 2 else { return }
        report(
            event, interface: interface, protocolFamily: protocolFamily, name: labels.first.map(String.init) ?? "",
            type: labels.count == 2 ? String(labels[1]) : "", domain: domain, operation: "avahi_service_type_browser")
    }
}

/// A service resolver: host, port, TXT record and one address (of either family: on an IPv6-only link an IPv4 resolve
/// would only time out) in one answer. ``ServiceDiscovery`` asks for an IPv4 address after an IPv6 one.
final class AvahiResolve: AvahiSink<ResolveEvent>, @unchecked Sendable {
    private let name: String
    private let type: String
    private let domain: String
    private let interface: AvahiIfIndex

    init(
        name: String, type: String, domain: String, interface: AvahiIfIndex, daemon: AvahiDaemonClient,
        queue: DispatchQueue, deliver: @escaping (ResolveEvent) -> Void
    ) {
        self.name = name
        self.type = type
        self.domain = domain
        self.interface = interface
        super.init(daemon: daemon, queue: queue, deliver: deliver, free: { avahi_service_resolver_free($0) })
    }

    /// Creates the resolver (with the poll's lock held).
    func makeResolver(client: OpaquePointer, userdata: UnsafeMutableRawPointer) -> OpaquePointer? {
        avahi_service_resolver_new(
            client, interface, AvahiProtocol(AVAHI_PROTO_UNSPEC), name, type, domain, AvahiProtocol(AVAHI_PROTO_UNSPEC),
            AvahiLookupFlags(0),
            { _, interface, _, event, _, _, _, host, address, port, txt, _, userdata in
                guard let userdata else { return }
                Unmanaged<AvahiResolve>.fromOpaque(userdata).takeUnretainedValue().resolved(
                    event, interface: interface, host: host, address: address, port: port, txt: txt)
            }, userdata)
    }

    private func resolved(
        _ event: AvahiResolverEvent, interface: AvahiIfIndex, host: UnsafePointer<CChar>?,
        address: UnsafePointer<AvahiAddress>?,
        port: UInt16, txt: UnsafeMutablePointer<AvahiStringList>?
    ) {
        if event == AVAHI_RESOLVER_FOUND {
            let record = TXTRecord(bytes: AvahiDiscovery.wireBytes(of: txt))
            // A fully qualified name, as `dns_sd` reports it (`host.local.`).
            let hostName = host.map { String(cString: $0) } ?? ""
            send(
                .resolved(
                    host: hostName.isEmpty || hostName.hasSuffix(".") ? hostName : hostName + ".", port: port,
                    txt: record, interfaceIndex: UInt32(max(interface, 0)),
                    addresses: address.map { [AvahiDiscovery.text(of: $0)] } ?? []))
            return
        }
        send(.failed(daemon.lastErrorLocked(operation: "avahi_service_resolver")))
    }
}
#endif

#if !canImport(CAvahiClient)
/// Avahi's own client library is not built on this platform (macOS): the `dns_sd` backend serves.
enum AvahiDiscovery {
    static let isAvailable = false
    static let implementation: (any Discovery)? = nil
}
#endif
