import Dispatch
import NIOConcurrencyHelpers
import Testing

@testable import ChirpDiscovery

/// An instance whose host moved is resolved again: when the peer table asks (its connection ended, a dial found
/// nobody), and when the instance is gone from the interface it was resolved on but still seen on another. Its new
/// address is reported with a second `found`. A scripted backend; no daemon.
@Suite(.timeLimit(.minutes(1))) struct ResolveAgainTests {
    @Test func anInstanceIsResolvedAgainOnRequestAndReportedWhereItIsNow() async throws {
        let backend = MovingDiscovery(interfaces: [1001: "10.0.0.2"])
        let (discovery, services) = try start(backend)
        defer { discovery.stop() }
        try await services.waitForCount(1, timeout: 10)
        backend.setAddress("10.0.0.9", on: 1001)
        discovery.resolveAgain(instanceName: "peer")
        try await services.waitForCount(2, timeout: 10)
        #expect(services.values.map(\.addresses) == [["10.0.0.2"], ["10.0.0.9"]])
    }

    @Test func anInstanceGoneFromTheInterfaceItWasResolvedOnIsResolvedOnAnotherThatRemains() async throws {
        let backend = MovingDiscovery(interfaces: [1001: "10.0.0.2", 1002: "10.1.0.2", 1003: "10.2.0.2"])
        let (discovery, services) = try start(backend)
        defer { discovery.stop() }
        try await services.waitForCount(1, timeout: 10)
        #expect(services.values.first?.interfaceIndex == 1001)
        // Gone from an interface it was not resolved on: nothing to do (the control is the next step's count).
        backend.remove(from: 1003)
        // Gone from the one it was resolved on: resolved again on one that remains.
        backend.remove(from: 1001)
        try await services.waitForCount(2, timeout: 10)
        #expect(services.values.last?.addresses == ["10.1.0.2"])
        #expect(services.values.last?.interfaceIndex == 1002)
        #expect(backend.resolves == [1001, 1002], "the removal from 1003 started a resolve")
    }

    /// The link behind the interface it was resolved on went on the peer's side only: the daemon's cache there still
    /// answers the address that failed. The answer is taken from another interface the instance is seen on.
    @Test func anAnswerOfOnlyTheAddressThatFailedIsTakenFromAnotherInterface() async throws {
        let backend = MovingDiscovery(interfaces: [1001: "10.0.0.2", 1002: "10.1.0.2"])
        let (discovery, services) = try start(backend)
        defer { discovery.stop() }
        try await services.waitForCount(1, timeout: 10)
        discovery.resolveAgain(instanceName: "peer", avoiding: ["10.0.0.2"])
        try await services.waitForCount(2, timeout: 10)
        #expect(services.values.last?.addresses == ["10.1.0.2"])
        #expect(services.values.last?.interfaceIndex == 1002)
        #expect(backend.resolves == [1001, 1001, 1002])
        // And back: the one that failed now is avoided in turn.
        discovery.resolveAgain(instanceName: "peer", avoiding: ["10.1.0.2"])
        try await services.waitForCount(3, timeout: 10)
        #expect(services.values.last?.addresses == ["10.0.0.2"])
        // Control: an answer with another address is taken where it came from.
        backend.setAddress("10.0.0.9", on: 1001)
        discovery.resolveAgain(instanceName: "peer", avoiding: ["10.0.0.2"])
        try await services.waitForCount(4, timeout: 10)
        #expect(services.values.last?.addresses == ["10.0.0.9"])
        #expect(backend.resolves == [1001, 1001, 1002, 1002, 1001, 1001])
    }

    @Test func anAnswerOfOnlyTheAddressThatFailedIsReportedWhenNoOtherInterfaceIsLeft() async throws {
        let backend = MovingDiscovery(interfaces: [1001: "10.0.0.2"])
        let (discovery, services) = try start(backend)
        defer { discovery.stop() }
        try await services.waitForCount(1, timeout: 10)
        discovery.resolveAgain(instanceName: "peer", avoiding: ["10.0.0.2"])
        try await services.waitForCount(2, timeout: 10)
        #expect(services.values.last?.addresses == ["10.0.0.2"])
        #expect(backend.resolves == [1001, 1001])
    }

    private func start(_ backend: MovingDiscovery) throws -> (ServiceDiscovery, Collected<DiscoveredService>) {
        let services = Collected<DiscoveredService>()
        let discovery = ServiceDiscovery(
            serviceType: try ServiceType("move"), domain: nil, interfaceIndex: 0, advertisement: nil,
            backend: backend, logger: testLogger("resolve-again")
        ) { event in
            if case .found(let service) = event { services.append(service) }
        }
        discovery.start()
        return (discovery, services)
    }
}

/// A backend that browses one instance ("peer") on each of `interfaces` (indexes that name no interface of this
/// machine, so no scope), resolves it on an interface to that interface's IPv4 address, and lets a test change an
/// address or take the instance off an interface.
final class MovingDiscovery: Discovery, @unchecked Sendable {
    private struct State {
        var addresses: [UInt32: String]
        var browser: (queue: DispatchQueue, deliver: Delivery<BrowseEvent>, type: String)?
        var resolves: [UInt32] = []
    }

    private let state: NIOLockedValueBox<State>

    init(interfaces: [UInt32: String]) {
        state = NIOLockedValueBox(State(addresses: interfaces))
    }

    /// The interfaces resolved on, in order.
    var resolves: [UInt32] { state.withLockedValue { $0.resolves } }

    func setAddress(_ address: String, on interface: UInt32) {
        state.withLockedValue { $0.addresses[interface] = address }
    }

    /// The browser reports the instance removed from `interface`.
    func remove(from interface: UInt32) {
        guard let browser = state.withLockedValue({ $0.browser }) else { return }
        browser.queue.async {
            browser.deliver.handler(
                .removed(name: "peer", type: browser.type, domain: "local.", interfaceIndex: interface))
        }
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
        let deliver = Delivery(handler)
        let interfaces = state.withLockedValue { state in
            state.browser = (queue, deliver, type)
            return state.addresses.keys.sorted()
        }
        queue.async {
            for index in interfaces {
                deliver.handler(.added(name: "peer", type: type, domain: "local.", interfaceIndex: index))
            }
        }
        return Operation()
    }

    func resolve(
        name: String, type: String, domain: String, interfaceIndex: UInt32, queue: DispatchQueue,
        releases: DispatchGroup?, handler: @escaping (ResolveEvent) -> Void
    ) throws -> any DiscoveryOperation {
        let address = state.withLockedValue { state in
            state.resolves.append(interfaceIndex)
            return state.addresses[interfaceIndex]
        }
        let deliver = Delivery(handler)
        queue.async {
            deliver.handler(
                .resolved(
                    host: "peer.local.", port: 7, txt: TXTRecord(), interfaceIndex: interfaceIndex,
                    addresses: address.map { [$0] } ?? []))
        }
        return Operation()
    }

    func queryAddress(
        host: String, ipv6: Bool, interfaceIndex: UInt32, queue: DispatchQueue, releases: DispatchGroup?,
        handler: @escaping (AddressEvent) -> Void
    ) throws -> any DiscoveryOperation { Operation() }
}
