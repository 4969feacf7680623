import Chirp
import ChirpDiscovery
import Foundation
import NIOConcurrencyHelpers

/// What the Peers tab shows: the service types on the network and the instances of the ones asked for, as
/// `chirp browse` sees them (browsing only: nothing is advertised, no connection is made).
final class PeerDirectory: Sendable {
    /// One instance of a service.
    struct Instance: Sendable, Equatable {
        var name: String
        var id: String?
        var host: String
        var addresses: [String]
        var metadata: [String: String]
        var requiresSecret: Bool
        /// The device fingerprint it advertises when it uses a device identity (TXT `sec=id` and `fp`, read as
        /// Chirp's core reads them); `nil` otherwise, or when its `fp` is not a fingerprint.
        var fingerprint: Fingerprint?
    }

    /// The keys of Chirp's TXT record that say a peer uses a device identity (ChirpDiscovery's
    /// `TXTRecord.ReservedKey.secure` and `.fingerprint`, which this package cannot see).
    enum IdentityKey {
        static let secure = "sec"
        static let identityValue = "id"
        static let fingerprint = "fp"
    }

    /// The fingerprint `txt` advertises: with `sec=id`, its `fp` parsed; `nil` without an identity or for a text that
    /// is not a fingerprint (the TXT record is the peer's: untrusted).
    static func advertisedFingerprint(_ txt: [String: String]) -> Fingerprint? {
        guard txt[IdentityKey.secure] == IdentityKey.identityValue, let text = txt[IdentityKey.fingerprint] else {
            return nil
        }
        return try? Fingerprint(parsing: text)
    }

    private struct State {
        var types: Set<String> = []
        var browsed: [String: Browsed] = [:]
        var typeTask: Task<Void, Never>?
        var stopped = false
    }

    private struct Browsed {
        var instances: [String: Instance] = [:]
        var task: Task<Void, Never>?
        var lastAsked: ContinuousClock.Instant
    }

    /// At most this many service types are browsed at once (the least recently asked for stops first).
    static let maximumBrowsedTypes = 16

    private let interface: Configuration.Interface
    private let state = NIOLockedValueBox(State())

    init(interface: Configuration.Interface) {
        self.interface = interface
    }

    /// Starts watching the service types on the network.
    func start() {
        let browser = ServiceTypeBrowser(interface: interface)
        let task = Task { [weak self] in
            for await event in browser.events() {
                guard let self else { return }
                switch event {
                case .found(let type): self.state.withLockedValue { _ = $0.types.insert(type.registrationType) }
                case .lost(let type): self.state.withLockedValue { _ = $0.types.remove(type.registrationType) }
                case .unavailable: break
                }
            }
        }
        state.withLockedValue { $0.typeTask = task }
    }

    /// Stops every browse.
    func stop() {
        let tasks = state.withLockedValue { state -> [Task<Void, Never>] in
            state.stopped = true
            defer {
                state.browsed = [:]
                state.typeTask = nil
            }
            return state.browsed.values.compactMap(\.task) + [state.typeTask].compactMap { $0 }
        }
        tasks.forEach { $0.cancel() }
    }

    /// The service types seen, sorted.
    var serviceTypes: [String] { state.withLockedValue { $0.types.sorted() } }

    /// The instances of `serviceType` (browsed from the first time it is asked for; the first call waits up to
    /// `firstWait` for the first answers).
    func instances(of serviceType: ServiceType, firstWait: Duration = .milliseconds(500)) async -> [Instance] {
        let key = serviceType.registrationType
        let (isNew, evicted) = state.withLockedValue { state -> (Bool, Task<Void, Never>?) in
            if state.browsed[key] != nil {
                state.browsed[key]?.lastAsked = .now
                return (false, nil)
            }
            var evicted: Task<Void, Never>?
            if state.browsed.count >= Self.maximumBrowsedTypes,
                let oldest = state.browsed.min(by: { $0.value.lastAsked < $1.value.lastAsked })?.key
            {
                evicted = state.browsed.removeValue(forKey: oldest)?.task
            }
            state.browsed[key] = Browsed(lastAsked: .now)
            return (true, evicted)
        }
        evicted?.cancel()
        if isNew, let browser = try? ServiceBrowser(serviceType: key, interface: interface) {
            let task = Task { [weak self] in
                for await event in browser.events() {
                    guard let self else { return }
                    self.state.withLockedValue { state in
                        switch event {
                        case .found(let instance):
                            state.browsed[key]?.instances[instance.instanceName] = Instance(
                                name: instance.name, id: instance.peerID, host: instance.host,
                                addresses: instance.addresses.map { "\($0):\(instance.port)" },
                                metadata: instance.metadata,
                                requiresSecret: instance.requiresSecret,
                                fingerprint: Self.advertisedFingerprint(instance.txt))
                        case .lost(let name):
                            state.browsed[key]?.instances[name] = nil
                        case .unavailable:
                            break
                        }
                    }
                }
            }
            state.withLockedValue { $0.browsed[key]?.task = task }
            let deadline = ContinuousClock.now + firstWait
            while ContinuousClock.now < deadline, state.withLockedValue({ $0.browsed[key]?.instances.isEmpty ?? false })
            {
                try? await Task.sleep(for: .milliseconds(25))
            }
        }
        return state.withLockedValue { state in
            (state.browsed[key]?.instances.values).map { $0.sorted { ($0.name, $0.id ?? "") < ($1.name, $1.id ?? "") } }
                ?? []
        }
    }

}
