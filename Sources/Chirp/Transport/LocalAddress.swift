import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Whether this host can still use the address a connection goes from. A host that gets a new address (DHCP after a
/// reconnect, `ip addr` by hand) keeps its sockets bound to the old one: nothing more arrives on them, and what they
/// send cannot leave. So does a host whose interface went down (a cable pulled, Wi-Fi off): the address stays on the
/// interface, but nothing passes. The heartbeat asks when the peer has been quiet for two intervals, and closes such a
/// connection at once instead of after its timeout (``PeerChannelHandler``'s heartbeat).
enum LocalAddress {
    /// Whether `address` (a connection's local end) is an IP address that no interface of this host that is up (and
    /// has a link) has now. `false` when that cannot be told (not an IP address, or the interfaces cannot be listed).
    static func isGone(_ address: SocketAddress) -> Bool {
        guard let ip = address.ipAddress, let devices = try? System.enumerateDevices() else { return false }
        let usable = usableInterfaces()
        return isGone(
            ip, among: devices.compactMap { $0.address?.ipAddress },
            usable: devices.filter { usable?.contains($0.name) ?? true }.compactMap { $0.address?.ipAddress })
    }

    /// Whether `ip` is none of `addresses` (the decision, apart from listing the interfaces).
    static func isGone(_ ip: String, among addresses: [String]) -> Bool {
        !addresses.isEmpty && !addresses.contains(ip)
    }

    /// Whether `ip` is none of `usable` (the addresses of interfaces that are up and have a link), among all of this
    /// host's `addresses`.
    static func isGone(_ ip: String, among addresses: [String], usable: [String]) -> Bool {
        !addresses.isEmpty && !usable.contains(ip)
    }

    /// The names of the interfaces that are up and running (`IFF_UP`, `IFF_RUNNING`: the link has a carrier); `nil`
    /// when they cannot be listed.
    private static func usableInterfaces() -> Set<String>? {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return nil }
        defer { freeifaddrs(list) }
        var names: Set<String> = []
        var cursor: UnsafeMutablePointer<ifaddrs>? = first
        let wanted = UInt32(IFF_UP) | UInt32(IFF_RUNNING)
        while let entry = cursor {
            defer { cursor = entry.pointee.ifa_next }
            if UInt32(entry.pointee.ifa_flags) & wanted == wanted {
                names.insert(String(cString: entry.pointee.ifa_name))
            }
        }
        return names
    }
}
