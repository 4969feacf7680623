import Dispatch
import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import ChirpDiscovery

/// The addresses discovery reports for an instance, from a scripted backend: in dialing order (IPv4, global IPv6,
/// link-local IPv6), link-local ones scoped with the interface they were found on, IPv4 asked for after a resolve that
/// answered IPv6 only (Avahi's own resolves answer one family), and an IPv6-only host reported after a short wait.
@Suite(.timeLimit(.minutes(1))) struct DiscoveredAddressTests {
    /// An interface of this machine other than loopback (a link-local address found there is scoped with its name),
    /// or, without one, an index that names no interface (no scope).
    static let interface: (index: UInt32, name: String?) = {
        for index in UInt32(1)...64 where index != DNSSDEnvironment.loopbackIndex {
            if let name = DNSSDEnvironment.interfaceName(index: index) { return (index, name) }
        }
        return (9999, nil)
    }()

    static func scoped(_ address: String) -> String {
        interface.name.map { "\(address)%\($0)" } ?? address
    }

    @Test func anIPv6OnlyResolveIsCompletedWithAnIPv4QueryAndScoped() async throws {
        let backend = ScriptedDiscovery(resolved: ["fe80::2"], answers: [false: ["10.0.0.2"]])
        let service = try await found(with: backend)
        #expect(service.addresses == ["10.0.0.2", Self.scoped("fe80::2")])
        #expect(backend.queried == [false])
    }

    @Test func aHostWithIPv6OnlyIsReportedAfterTheIPv4WaitWithItsScope() async throws {
        let backend = ScriptedDiscovery(resolved: ["fe80::2"], answers: [:])
        let started = DispatchTime.now()
        let service = try await found(with: backend)
        #expect(service.addresses == [Self.scoped("fe80::2")])
        #expect(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds >= 200_000_000)
    }

    @Test func addressQueriesAreMergedInDialingOrder() async throws {
        // The dns_sd path: the resolve has no address; both families are queried.
        let backend = ScriptedDiscovery(resolved: [], answers: [true: ["fe80::2", "fd00::2"]])
        let service = try await found(with: backend)
        #expect(service.addresses == ["fd00::2", Self.scoped("fe80::2")])
        #expect(Set(backend.queried) == [false, true])
    }

    /// Runs discovery on `backend` until it reports the one instance it scripts.
    private func found(with backend: ScriptedDiscovery) async throws -> DiscoveredService {
        let services = Collected<DiscoveredService>()
        let discovery = ServiceDiscovery(
            serviceType: try ServiceType("addr"), domain: nil, interfaceIndex: 0, advertisement: nil,
            backend: backend, logger: testLogger("addresses")
        ) { event in
            if case .found(let service) = event { services.append(service) }
        }
        discovery.start()
        defer { discovery.stop() }
        try await services.waitForCount(1, timeout: 10)
        return try #require(services.values.first)
    }
}

/// A backend that browses one instance ("peer" on ``DiscoveredAddressTests/interface``), resolves it with `resolved`
/// as the addresses, and answers address queries per family (`answers[ipv6]`; no answer for a family not listed).
final class ScriptedDiscovery: Discovery {
    private let resolved: [String]
    private let answers: [Bool: [String]]
    private let queries = NIOLockedValueBox<[Bool]>([])
    /// The families queried (`true`: IPv6), in order.
    var queried: [Bool] { queries.withLockedValue { $0 } }

    init(resolved: [String], answers: [Bool: [String]]) {
        self.resolved = resolved
        self.answers = answers
    }

    final class Operation: DiscoveryOperation {
        func cancel() {}
    }

    func register(
        name: String, type: String, domain: String?, interfaceIndex: UInt32, port: UInt16, txt: TXTRecord,
        queue: DispatchQueue, releases: DispatchGroup?, handler: @escaping (RegisterEvent) -> Void
    ) throws -> any DiscoveryOperation { Operation() }

    func browse(
        type: String, domain: String?, interfaceIndex: UInt32, queue: DispatchQueue, releases: DispatchGroup?,
        handler: @escaping (BrowseEvent) -> Void
    ) throws -> any DiscoveryOperation {
        let index = DiscoveredAddressTests.interface.index
        let deliver = Delivery(handler)
        queue.async { deliver.handler(.added(name: "peer", type: type, domain: "local.", interfaceIndex: index)) }
        return Operation()
    }

    func resolve(
        name: String, type: String, domain: String, interfaceIndex: UInt32, queue: DispatchQueue,
        releases: DispatchGroup?, handler: @escaping (ResolveEvent) -> Void
    ) throws -> any DiscoveryOperation {
        let (addresses, deliver) = (resolved, Delivery(handler))
        queue.async {
            deliver.handler(
                .resolved(
                    host: "peer.local.", port: 7, txt: TXTRecord(), interfaceIndex: interfaceIndex,
                    addresses: addresses))
        }
        return Operation()
    }

    func queryAddress(
        host: String, ipv6: Bool, interfaceIndex: UInt32, queue: DispatchQueue, releases: DispatchGroup?,
        handler: @escaping (AddressEvent) -> Void
    ) throws -> any DiscoveryOperation {
        queries.withLockedValue { $0.append(ipv6) }
        let (answers, deliver) = (answers[ipv6] ?? [], Delivery(handler))
        queue.async {
            for address in answers { deliver.handler(.address(address, interfaceIndex: interfaceIndex)) }
        }
        return Operation()
    }
}

/// A backend's event handler, called on the serial queue it was given (as the real backends do).
struct Delivery<Event>: @unchecked Sendable {
    let handler: (Event) -> Void
    init(_ handler: @escaping (Event) -> Void) { self.handler = handler }
}
