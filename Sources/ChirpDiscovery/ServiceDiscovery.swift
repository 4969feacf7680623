import ChirpSupport
import Dispatch
import Logging

/// A service instance found by browsing and resolved down to an address.
package struct DiscoveredService: Sendable, Equatable {
    /// The DNS-SD instance name (unique on the network).
    package var instanceName: String
    /// The target host name, e.g. `myhost.local.`.
    package var host: String
    /// The TCP port.
    package var port: UInt16
    /// The TXT record.
    package var txt: TXTRecord
    /// The host's addresses found so far (IPv4 and/or IPv6, as text).
    package var addresses: [String]
    /// The interface it was found on.
    package var interfaceIndex: UInt32
}

/// What ``ServiceDiscovery`` reports.
package enum DiscoveryEvent: Sendable {
    /// Our own registration is in place under this instance name.
    case advertised(instanceName: String)
    /// An instance was reported by the browser (once per instance name); a `found` follows once it is resolved.
    case sighted(instanceName: String)
    /// An instance was found and resolved.
    case found(DiscoveredService)
    /// An instance is no longer advertised on any interface.
    case lost(instanceName: String)
    /// The daemon does not answer; discovery retries by itself. The message says what to start.
    case unavailable(String)
}

/// Advertises one service and browses its type through the platform's DNS-SD daemon, resolving every instance found.
///
/// Knows nothing of TCP: it reports instances with their addresses and leaves connecting to others. All DNS-SD calls
/// run on a private serial queue, so neither callers nor NIO event loops ever wait on the daemon. When the daemon is
/// missing or goes away, everything is torn down and retried with backoff until it answers again.
package final class ServiceDiscovery: @unchecked Sendable {
    /// What to advertise.
    package struct Advertisement: Sendable {
        package var instanceName: String
        package var port: UInt16
        package var txt: TXTRecord

        package init(instanceName: String, port: UInt16, txt: TXTRecord) {
            self.instanceName = instanceName
            self.port = port
            self.txt = txt
        }
    }

    private struct Instance {
        var interfaces: Set<UInt32> = []
        var resolver: (any DiscoveryOperation)?
        var addressQueries: [any DiscoveryOperation] = []
        var pending: DiscoveredService?
        var reported = false
        var resolveAttempts = 0
        /// The type, domain and interface the browser first reported it under, for resolving it.
        var type = ""
        var domain = ""
        var interface: UInt32 = 0
        /// Not resolved because its peer is connected already (see ``connected(instanceName:)``).
        var parked = false
        /// When the current resolve attempt started, for the log.
        var resolveStarted: DispatchTime?
        /// Addresses that failed, given with ``ServiceDiscovery/resolveAgain(instanceName:avoiding:)``: an answer made
        /// of them only is not reported while another interface is left to ask (``InterfaceChoice``).
        var avoiding: Set<String> = []
        /// The interfaces resolved on since that request.
        var tried: Set<UInt32> = []

        /// Cancels the resolve and the address queries under way, if any.
        mutating func stopQueries() {
            resolver?.cancel()
            resolver = nil
            addressQueries.forEach { $0.cancel() }
            addressQueries = []
        }
    }

    private let queue: DispatchQueue
    private let serviceType: ServiceType
    private let domain: String?
    private let interfaceIndex: UInt32
    private let advertisement: Advertisement?
    private let resolveTimeout: Double
    private let resolveLater: (@Sendable (String) -> Bool)?
    private let logger: Logger
    private let backend: any Discovery
    private let metrics: (any DiscoveryMetrics)?
    private let handler: @Sendable (DiscoveryEvent) -> Void
    /// Entered by every DNS-SD reference while it exists; `stop` completes once all are released.
    private let releases = DispatchGroup()

    // Everything below is touched on `queue` only.
    private var running = false
    private var registration: (any DiscoveryOperation)?
    private var browser: (any DiscoveryOperation)?
    private var instances: [String: Instance] = [:]
    private var retry = DaemonRetry()
    private var resolves: ResolveScheduler
    /// Bumped at each (re)start so stale timers do nothing.
    private var generation = 0

    /// Discovery through `backend`'s implementation: what a transceiver runs.
    package convenience init(
        serviceType: ServiceType, domain: String?, interfaceIndex: UInt32, advertisement: Advertisement?,
        resolveLater: (@Sendable (String) -> Bool)? = nil, backend: DiscoveryBackend,
        metrics: (any DiscoveryMetrics)? = nil, logger: Logger, handler: @escaping @Sendable (DiscoveryEvent) -> Void
    ) {
        self.init(
            serviceType: serviceType, domain: domain, interfaceIndex: interfaceIndex, advertisement: advertisement,
            resolveLater: resolveLater, backend: backend.implementation, metrics: metrics, logger: logger,
            handler: handler)
    }

    init(
        serviceType: ServiceType, domain: String?, interfaceIndex: UInt32, advertisement: Advertisement?,
        resolveTimeout: Double = 5, maxConcurrentResolves: Int = 2, resolveLater: (@Sendable (String) -> Bool)? = nil,
        backend: any Discovery = DNSSDDiscovery(), metrics: (any DiscoveryMetrics)? = nil, logger: Logger,
        handler: @escaping @Sendable (DiscoveryEvent) -> Void
    ) {
        self.backend = backend
        self.metrics = metrics
        self.queue = DispatchQueue(label: "chirp.discovery.\(serviceType.name)")
        self.serviceType = serviceType
        self.domain = domain
        self.interfaceIndex = interfaceIndex
        self.advertisement = advertisement
        self.resolveTimeout = resolveTimeout
        self.resolveLater = resolveLater
        self.resolves = ResolveScheduler(maximum: maxConcurrentResolves)
        self.logger = logger
        self.handler = handler
    }

    /// Starts advertising and browsing. Returns at once; results arrive through the handler.
    package func start() {
        queue.async {
            guard !self.running else { return }
            self.running = true
            self.attemptStart()
        }
    }

    /// Stops everything and releases every DNS-SD reference; `completion` runs once they are released.
    package func stop(completion: (@Sendable () -> Void)? = nil) {
        queue.async {
            self.running = false
            self.tearDown(reportLost: false)
            // Deallocation happens in the sources' cancel handlers; complete once every reference is released.
            self.releases.notify(queue: self.queue) { completion?() }
        }
    }

    /// The peer advertised as `instanceName` is connected (it dialed us): its instance need not be resolved, and
    /// leaves the line (a resolve under way is cancelled) until ``disconnected(instanceName:)``.
    package func connected(instanceName: String) {
        queue.async {
            guard var instance = self.instances[instanceName], !instance.reported, self.resolves.contains(instanceName)
            else { return }
            instance.parked = true
            self.instances[instanceName] = instance
            self.stopResolving(instanceName)
            self.resolves.remove(instanceName)
            self.logger.debug(
                "peer connected before its instance was resolved; not resolving it",
                metadata: ["instance": "\(UntrustedText.escaped(instanceName))"])
            self.startResolves()
        }
    }

    /// The connection to the peer advertised as `instanceName` is gone: if its instance was left unresolved
    /// because of that connection, it is resolved now.
    package func disconnected(instanceName: String) {
        queue.async {
            guard var instance = self.instances[instanceName], instance.parked else { return }
            instance.parked = false
            self.instances[instanceName] = instance
            self.resolves.enqueue(instanceName)
            self.startResolves()
        }
    }

    /// The address reported for `instanceName` may be stale (its connection ended, or a dial to it failed): the
    /// instance is resolved again, and reported again (a `found`) with what the daemon says now. A host that got a new
    /// address, or lost the interface it was reached on, keeps its advertisement: only a new resolve tells.
    ///
    /// `avoiding`: the addresses that failed (without port: `10.0.0.2`, `fe80::1%eth0`). An answer made of them only,
    /// from the daemon's cache of a link that is gone, is not reported while the instance is seen on an interface not
    /// asked yet: it is resolved there (``InterfaceChoice``).
    package func resolveAgain(instanceName: String, avoiding: [String] = []) {
        queue.async {
            guard self.running, var instance = self.instances[instanceName], instance.reported else { return }
            self.logger.debug(
                "resolving again",
                metadata: [
                    "instance": "\(UntrustedText.escaped(instanceName))",
                    "avoiding": "\(avoiding.joined(separator: ", "))"
                ])
            instance.avoiding = Set(avoiding)
            instance.tried = []
            self.instances[instanceName] = instance
            self.restartResolve(instanceName)
        }
    }

    /// Forgets what was resolved for `name` and puts it back in line (at the front of its lane: it was resolved before).
    private func restartResolve(_ name: String) {
        guard var instance = instances[name] else { return }
        instance.stopQueries()
        instance.reported = false
        instance.pending = nil
        instance.parked = false
        instances[name] = instance
        resolves.remove(name)
        resolves.enqueue(name)
        startResolves()
    }

    // MARK: - Lifecycle (on queue)

    private func attemptStart() {
        guard running else { return }
        generation += 1
        do {
            if let advertisement {
                registration = try backend.register(
                    name: advertisement.instanceName, type: serviceType.registrationType, domain: domain,
                    interfaceIndex: interfaceIndex, port: advertisement.port, txt: advertisement.txt, queue: queue,
                    releases: releases
                ) { [unowned self] event in self.handle(event) }
            }
            logger.debug(
                "browsing",
                metadata: ["type": "\(serviceType.registrationType)", "advertising": "\(advertisement != nil)"])
            browser = try backend.browse(
                type: serviceType.registrationType, domain: domain, interfaceIndex: interfaceIndex, queue: queue,
                releases: releases
            ) { [unowned self] event in self.handle(event) }
            if retry.succeeded() {
                logger.notice(
                    "DNS-SD daemon answers again; advertising and browsing resumed",
                    metadata: ["service": "\(serviceType)"])
            }
        } catch let error as DNSSDError {
            fail(error)
        } catch {
            fail(DNSSDError(code: -65537, operation: "DNS-SD"))
        }
    }

    /// Tears everything down and schedules a restart with backoff.
    private func fail(_ error: DNSSDError) {
        metrics?.daemonErrors.increment()
        tearDown(reportLost: true)
        guard running else { return }
        let metadata: Logger.Metadata = ["service": "\(serviceType)"]
        let restart: @Sendable () -> Void = { [weak self] in self?.attemptStart() }
        if retry.failed(error, on: queue, logger: logger, metadata: metadata, restart: restart) {
            handler(.unavailable(error.description))
        }
    }

    private func tearDown(reportLost: Bool) {
        retry.cancel()
        registration?.cancel()
        registration = nil
        browser?.cancel()
        browser = nil
        for (name, var instance) in instances {
            instance.stopQueries()
            if reportLost && instance.reported { handler(.lost(instanceName: name)) }
        }
        instances = [:]
        resolves.reset()
    }

    // MARK: - Events (on queue)

    private func handle(_ event: RegisterEvent) {
        switch event {
        case .registered(let name):
            logger.debug(
                "advertised",
                metadata: ["instance": "\(UntrustedText.escaped(name))", "type": "\(serviceType.registrationType)"])
            handler(.advertised(instanceName: name))
        case .failed(let error):
            fail(error)
        }
    }

    private func handle(_ event: BrowseEvent) {
        switch event {
        case .added(let name, let type, let domain, let interface):
            if let advertisement, name == advertisement.instanceName { return }  // ourselves
            var instance = instances[name] ?? Instance()
            let isNew = instance.interfaces.isEmpty
            instance.interfaces.insert(interface)
            if isNew {
                instance.type = type
                instance.domain = domain
                instance.interface = interface
            }
            instances[name] = instance
            if isNew {
                logger.debug(
                    "instance sighted",
                    metadata: ["instance": "\(UntrustedText.escaped(name))", "interface": "\(interface)"])
                handler(.sighted(instanceName: name))
                resolves.enqueue(name, later: resolveLater?(name) ?? false)
                startResolves()
            }
        case .removed(let name, _, _, let interface):
            guard var instance = instances[name] else { return }
            instance.interfaces.remove(interface)
            if instance.interfaces.isEmpty {
                instance.stopQueries()
                instances[name] = nil
                resolves.remove(name)
                if instance.reported { handler(.lost(instanceName: name)) }
                startResolves()
            } else {
                let resolvedThere = instance.interface == interface
                if resolvedThere, let remaining = instance.interfaces.min() {
                    // Gone from the interface it was resolved on (that link went down): the address reported was
                    // reached over it. Resolved again on one that remains.
                    instance.interface = remaining
                }
                instances[name] = instance
                if resolvedThere && instance.reported {
                    logger.debug(
                        "instance gone from the interface it was resolved on; resolving it again",
                        metadata: ["instance": "\(UntrustedText.escaped(name))", "interface": "\(instance.interface)"])
                    restartResolve(name)
                }
            }
        case .failed(let error):
            fail(error)
        }
    }

    /// Starts the resolves that ``resolves`` lets run now (see ``ResolveScheduler``).
    private func startResolves() {
        while running, let name = resolves.next() {
            startResolve(name)
        }
    }

    private func startResolve(_ name: String) {
        guard var instance = instances[name] else {
            resolves.remove(name)
            return
        }
        instance.resolveAttempts += 1
        let started = DispatchTime.now()
        instance.resolveStarted = started
        let attempt = instance.resolveAttempts
        do {
            instance.resolver = try backend.resolve(
                name: name, type: instance.type, domain: instance.domain, interfaceIndex: instance.interface,
                queue: queue,
                releases: releases
            ) { [unowned self] event in self.handleResolve(event, name: name) }
            instances[name] = instance
        } catch let error as DNSSDError {
            instances[name] = instance
            couldNotStart(name, error)
            return
        } catch {
            instances[name] = instance
            resolves.remove(name)
            return
        }
        // A resolve (or its address query) that has not finished in time goes back in line, and its next attempt
        // gets longer (up to 4 times the timeout); so does one that failed, once this attempt's time is up. Starting
        // it takes a few milliseconds on a quiet machine; when the bus is so busy that it took longer, the answer
        // will too, and the timeout grows with it (restarting would only add to the load).
        let startup = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9
        let timeout = max(resolveTimeout, 4 * startup) * Double(min(attempt, 4))
        let generation = self.generation
        queue.asyncAfter(deadline: .now() + timeout) { [weak self] in
            guard let self, self.generation == generation, let instance = self.instances[name], !instance.reported,
                !instance.parked, instance.resolveAttempts == attempt
            else { return }
            self.logger.debug("resolve timed out; retrying", metadata: ["instance": "\(UntrustedText.escaped(name))"])
            self.stopResolving(name)
            self.resolves.finished(name, succeeded: false)
            self.resolves.enqueue(name)
            self.startResolves()
        }
    }

    /// Cancels `name`'s resolve and address queries, if any.
    private func stopResolving(_ name: String) {
        instances[name]?.stopQueries()
    }

    /// A resolve or address query for `name` did not start: the daemon is gone (``fail(_:)``), or it answers but
    /// refused this one (``refused(_:error:)``).
    private func couldNotStart(_ name: String, _ error: DNSSDError) {
        if error.daemonUnavailable {
            fail(error)
        } else {
            refused(name, error: error)
        }
    }

    /// The daemon answers but would not start a resolve or address query for `name`: with Avahi, every DNS-SD
    /// reference is a system-bus connection, and the bus allows 256 per user by default, shared by every process.
    /// `name` goes back to the front of the line and resolves pause for a while with fewer slots
    /// (``ResolveScheduler``), so that a busy machine sees a few retries rather than a storm, and one refusal never
    /// tears down the advertisement and the browser.
    private func refused(_ name: String, error: DNSSDError) {
        stopResolving(name)
        guard let delay = resolves.refused(name) else { return }
        logger.debug(
            "resolve not started; pausing resolves",
            metadata: [
                "instance": "\(UntrustedText.escaped(name))", "error": "\(error)",
                "retry-in": "\(SecondsText.format(delay))",
                "slots": "\(resolves.limit)"
            ])
        let generation = self.generation
        queue.asyncAfter(deadline: .now() + delay) { [weak self] in
            guard let self, self.generation == generation else { return }
            self.resolves.resume()
            self.startResolves()
        }
    }

    private func handleResolve(_ event: ResolveEvent, name: String) {
        guard var instance = instances[name] else { return }
        switch event {
        case .resolved(let host, let port, let txt, let interface, let addresses):
            let took =
                instance.resolveStarted.map {
                    Double(DispatchTime.now().uptimeNanoseconds - $0.uptimeNanoseconds) / 1e6
                } ?? 0
            logger.debug(
                "instance resolved",
                metadata: [
                    "instance": "\(UntrustedText.escaped(name))", "host": "\(UntrustedText.escaped(host))",
                    "port": "\(port)", "attempt": "\(instance.resolveAttempts)",
                    "ms": "\(Int(took))"
                ])
            instance.resolver?.cancel()
            instance.resolver = nil
            instance.pending = DiscoveredService(
                instanceName: name, host: host, port: port, txt: txt, addresses: [], interfaceIndex: interface)
            if interface != 0 && interface == DNSSDEnvironment.loopbackIndex {
                // Found on the loopback interface: the instance is on this machine, where every Chirp listener takes
                // IPv4 connections. No address query needed (it costs a daemon round trip).
                instance.pending?.addresses = ["127.0.0.1"]
                instances[name] = instance
                report(name)
                return
            }
            let scope = DNSSDEnvironment.interfaceName(index: interface)
            let resolved = IPAddressText.dialingOrder(addresses.map { IPAddressText.scoped($0, interface: scope) })
            if let first = resolved.first, !IPAddressText.isIPv6(first) {
                // The backend resolved an IPv4 address too (Avahi's own): nothing to wait for.
                instance.pending?.addresses = resolved
                instances[name] = instance
                report(name)
                return
            }
            // Avahi's compat layer has no DNSServiceGetAddrInfo: ask for A and AAAA records ourselves. After an IPv6
            // answer of Avahi's own resolve, ask for an IPv4 address (it answers one family only).
            instance.pending?.addresses = resolved
            do {
                for ipv6 in resolved.isEmpty ? [false, true] : [false] {
                    instance.addressQueries.append(
                        try backend.queryAddress(
                            host: host, ipv6: ipv6, interfaceIndex: interface, queue: queue, releases: releases
                        ) { [unowned self] event in self.handleAddress(event, name: name) })
                }
                instances[name] = instance
                if !resolved.isEmpty { reportSoon(name) }
            } catch let error as DNSSDError {
                instances[name] = instance
                couldNotStart(name, error)
            } catch {
                instances[name] = instance
            }
        case .failed(let error):
            guard queryFailed("resolve failed", name: name, error: error) else { return }
            // The slot is free at once; the instance is tried again when this attempt's time is up.
            stopResolving(name)
            resolves.finished(name, succeeded: false)
            startResolves()
        }
    }

    private func handleAddress(_ event: AddressEvent, name: String) {
        guard var instance = instances[name], var service = instance.pending else { return }
        switch event {
        case .address(let text, let interface):
            let scope = DNSSDEnvironment.interfaceName(index: interface != 0 ? interface : service.interfaceIndex)
            let address = IPAddressText.scoped(text, interface: scope)
            guard !service.addresses.contains(address) else { return }
            // IPv4 first (every Chirp listener takes it), then global IPv6, then link-local IPv6.
            service.addresses = IPAddressText.dialingOrder(service.addresses + [address])
            instance.pending = service
            instances[name] = instance
            if instance.reported { return }
            if IPAddressText.isIPv6(address) {
                reportSoon(name)
            } else {
                report(name)
            }
        case .failed(let error):
            queryFailed("address query failed", name: name, error: error)
        }
    }

    /// Only IPv6 so far: gives an IPv4 answer a moment (``ipv4Grace``) before settling for what is there.
    private func reportSoon(_ name: String) {
        queue.asyncAfter(deadline: .now() + Self.ipv4Grace) { [weak self] in self?.report(name) }
    }

    /// How long an instance with only IPv6 addresses waits for an IPv4 one before it is reported.
    static let ipv4Grace: DispatchTimeInterval = .milliseconds(250)

    /// A resolve or address query for `name` failed: when the daemon is gone, everything restarts (``fail(_:)``) and
    /// this returns `false`; otherwise the failure is logged (`what`) and this returns `true`.
    @discardableResult
    private func queryFailed(_ what: String, name: String, error: DNSSDError) -> Bool {
        if error.daemonUnavailable {
            fail(error)
            return false
        }
        logger.debug("\(what)", metadata: ["instance": "\(UntrustedText.escaped(name))", "error": "\(error)"])
        return true
    }

    /// Reports a resolved instance once and stops its address queries; or, when the answer is only addresses that
    /// failed and another interface is left to ask, resolves it there instead (``InterfaceChoice``).
    private func report(_ name: String) {
        guard var instance = instances[name], !instance.reported, let service = instance.pending else { return }
        instance.tried.insert(instance.interface)
        if let next = InterfaceChoice.next(
            seenOn: instance.interfaces, tried: instance.tried, answered: service.addresses,
            avoiding: instance.avoiding)
        {
            logger.debug(
                "resolved to an address that failed; resolving on another interface",
                metadata: [
                    "instance": "\(UntrustedText.escaped(name))",
                    "answer": "\(service.addresses.joined(separator: ", "))",
                    "interface": "\(next)"
                ])
            instance.interface = next
            instances[name] = instance
            restartResolve(name)
            return
        }
        instance.avoiding = []
        instance.tried = []
        instance.reported = true
        instance.addressQueries.forEach { $0.cancel() }
        instance.addressQueries = []
        instances[name] = instance
        resolves.finished(name, succeeded: true)
        metrics?.resolves.increment()
        handler(.found(service))
        startResolves()
    }
}
