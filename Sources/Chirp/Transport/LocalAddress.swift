import NIOCore
import NIOPosix

/// Whether this host still has the address a connection goes from. A host that gets a new address (DHCP after a
/// reconnect, `ip addr` by hand) keeps its sockets bound to the old one: nothing more arrives on them, and what they
/// send cannot leave. The heartbeat asks when the peer has been quiet for two intervals, and closes such a connection
/// at once instead of after its timeout (``PeerChannelHandler``'s heartbeat).
enum LocalAddress {
    /// Whether `address` (a connection's local end) is an IP address that no interface of this host has now. `false`
    /// when that cannot be told (not an IP address, or the interfaces cannot be listed).
    static func isGone(_ address: SocketAddress) -> Bool {
        guard let ip = address.ipAddress, let devices = try? System.enumerateDevices() else { return false }
        return isGone(ip, among: devices.compactMap { $0.address?.ipAddress })
    }

    /// Whether `ip` is none of `addresses` (the decision, apart from listing the interfaces).
    static func isGone(_ ip: String, among addresses: [String]) -> Bool {
        !addresses.isEmpty && !addresses.contains(ip)
    }
}
