/// Where to advertise, browse and listen: a transceiver's `Configuration.interface`, or where a ``ServiceBrowser`` or
/// ``ServiceTypeBrowser`` looks.
public enum NetworkInterface: Sendable, Hashable, CustomStringConvertible {
    /// Every interface the DNS-SD daemon serves; listen on all IPv4 and IPv6 addresses (`0.0.0.0` and `::`, one port).
    case any
    /// This machine only: advertise and browse on the loopback interface and listen on 127.0.0.1 and ::1 (the same
    /// port on both; IPv4 only when the host has no ::1).
    case loopback
    /// One network interface by name (e.g. `eth0`); listen on all IPv4 and IPv6 addresses.
    case named(String)

    public var description: String {
        switch self {
        case .any: return "any"
        case .loopback: return "loopback"
        case .named(let name): return name
        }
    }

    /// The interface index DNS-SD calls take (0 = all).
    package var index: UInt32 {
        switch self {
        case .any: return 0
        case .loopback: return DNSSDEnvironment.loopbackIndex ?? 0
        case .named(let name): return DNSSDEnvironment.interfaceIndex(named: name) ?? 0
        }
    }
}
