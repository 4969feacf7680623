import Chirp
import ChirpDiscovery
import Foundation
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why nothing was found on a network interface named with `--interface`, in words: the interface is down or has no
/// address, or the peers are advertised on another interface (found with a short browse on every interface).
enum InterfaceDiagnosis {
    /// What this host knows of one interface.
    struct State: Sendable {
        var isUp: Bool
        /// Its IPv4 and IPv6 addresses with their prefixes, to tell which interface reaches an address.
        var networks: [Network]
        var isLoopback: Bool
    }

    /// One address of an interface and its netmask, as bytes (4 for IPv4, 16 for IPv6).
    struct Network: Sendable {
        var address: [UInt8]
        var mask: [UInt8]

        func contains(_ other: [UInt8]) -> Bool {
            guard other.count == address.count, mask.count == address.count else { return false }
            return zip(zip(address, other), mask).allSatisfy { pair, mask in pair.0 & mask == pair.1 & mask }
        }
    }

    /// Every interface of this host, by name.
    static func interfaces() -> [String: State] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return [:] }
        defer { freeifaddrs(list) }
        var states: [String: State] = [:]
        var cursor: UnsafeMutablePointer<ifaddrs>? = first
        while let entry = cursor {
            defer { cursor = entry.pointee.ifa_next }
            let name = String(cString: entry.pointee.ifa_name)
            let flags = entry.pointee.ifa_flags
            var state =
                states[name]
                ?? State(
                    isUp: flags & UInt32(IFF_UP) != 0, networks: [], isLoopback: flags & UInt32(IFF_LOOPBACK) != 0)
            if let address = entry.pointee.ifa_addr, let bytes = Self.bytes(of: address),
                let netmask = entry.pointee.ifa_netmask, let mask = Self.bytes(of: netmask)
            {
                state.networks.append(Network(address: bytes, mask: mask))
            }
            states[name] = state
        }
        return states
    }

    /// The bytes of an IPv4 or IPv6 socket address; `nil` for another family.
    private static func bytes(of address: UnsafeMutablePointer<sockaddr>) -> [UInt8]? {
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            return address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { ipv4 in
                withUnsafeBytes(of: ipv4.pointee.sin_addr) { Array($0) }
            }
        case AF_INET6:
            return address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { ipv6 in
                withUnsafeBytes(of: ipv6.pointee.sin6_addr) { Array($0) }
            }
        default:
            return nil
        }
    }

    /// The bytes of an address as DNS-SD reports it (`192.168.1.20`, `fe80::1%eth0`), and the interface its scope
    /// names, if any.
    static func parse(_ text: String) -> (bytes: [UInt8], scope: String?)? {
        let parts = text.split(separator: "%", maxSplits: 1)
        guard let host = parts.first.map(String.init) else { return nil }
        let scope = parts.count > 1 ? String(parts[1]) : nil
        var ipv4 = in_addr()
        if inet_pton(AF_INET, host, &ipv4) == 1 { return (withUnsafeBytes(of: ipv4) { Array($0) }, scope) }
        var ipv6 = in6_addr()
        if inet_pton(AF_INET6, host, &ipv6) == 1 { return (withUnsafeBytes(of: ipv6) { Array($0) }, scope) }
        return nil
    }

    /// The interface of this host that reaches `address`: the one whose network holds it (loopback addresses: the
    /// loopback interface).
    static func interface(reaching address: String, in interfaces: [String: State]) -> String? {
        guard let (bytes, scope) = parse(address) else { return nil }
        if let scope, interfaces[scope] != nil { return scope }
        let sorted = interfaces.sorted { $0.key < $1.key }
        return sorted.first { $0.value.networks.contains { $0.contains(bytes) } }?.key
    }

    /// A problem with `name` that keeps every peer away: down, or without an address. `nil` when it looks usable.
    static func problem(with name: String) -> String? {
        guard let state = interfaces()[name] else { return nil }
        if !state.isUp { return "the network interface \(name) is down" }
        if state.networks.isEmpty { return "the network interface \(name) has no IP address" }
        return nil
    }

    /// Where the instances of `type` are advertised, browsing every interface for `within`: interface name and the
    /// names of the instances seen through it, sorted.
    static func advertisements(of type: ServiceType, within: Duration) async -> [(interface: String, names: [String])] {
        guard let browser = try? ServiceBrowser(serviceType: type.name, interface: .any) else { return [] }
        let found: [ServiceInstance] = await withTaskGroup(of: [ServiceInstance]?.self) { group in
            let seen = InstanceLog()
            group.addTask {
                for await event in browser.events() {
                    if case .found(let instance) = event { seen.add(instance) }
                    if case .unavailable = event { return [] }
                }
                return seen.all
            }
            group.addTask {
                try? await Task.sleep(for: within)
                return nil
            }
            defer { group.cancelAll() }
            _ = await group.next()
            return seen.all
        }
        let interfaces = interfaces()
        var names: [String: Set<String>] = [:]
        for instance in found {
            for address in instance.addresses {
                if let interface = interface(reaching: address, in: interfaces) {
                    names[interface, default: []].insert(instance.name)
                }
            }
        }
        return names.sorted { $0.key < $1.key }.map { ($0.key, $0.value.sorted()) }
    }

    /// What to tell a user who found nothing of `type` on `--interface name`: the problem (or `nil`), and a hint.
    static func explain(type: ServiceType, interface name: String) async -> (problem: String?, hint: String?) {
        let problem = problem(with: name)
        let elsewhere = await advertisements(of: type, within: .milliseconds(1500)).filter { $0.interface != name }
        var hint: String?
        if let other = elsewhere.first {
            let places = elsewhere.map { "\($0.interface) (\(list($0.names)))" }.joined(separator: ", ")
            hint =
                "peers of \(type.registrationType) are advertised on \(places): use --interface \(other.interface)"
                + (elsewhere.count > 1 || other.interface != "lo" ? ", or --interface any for every interface" : "")
        } else if problem != nil {
            hint =
                "bring it up (`sudo ip link set \(name) up`), or choose another interface with --interface (`ip -br addr` lists them; any uses every one)"
        }
        return (problem, hint)
    }

    /// Up to three names, then how many more.
    private static func list(_ names: [String]) -> String {
        let shown = names.prefix(3).joined(separator: ", ")
        return names.count > 3 ? "\(shown) and \(names.count - 3) more" : shown
    }
}

/// The instances a diagnosis browse saw.
private final class InstanceLog: Sendable {
    private let box = NIOLockedValueBox<[ServiceInstance]>([])
    func add(_ instance: ServiceInstance) { box.withLockedValue { $0.append(instance) } }
    var all: [ServiceInstance] { box.withLockedValue { $0 } }
}
