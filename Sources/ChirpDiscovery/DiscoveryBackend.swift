#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Which DNS-SD implementation a transceiver (its `Configuration.discoveryBackend`), a ``ServiceBrowser`` or a
/// ``ServiceTypeBrowser`` talks to.
///
/// ```swift
/// var configuration = Configuration(serviceType: "chat")
/// configuration.discoveryBackend = .dnsSD  // on Linux: Avahi's Bonjour compatibility library
/// ```
public enum DiscoveryBackend: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// The `CHIRP_DISCOVERY` environment variable when it is set (`avahi` or `dns-sd`), else ``avahi`` on Linux
    /// and ``dnsSD`` elsewhere. The command-line tools and the tests choose through the variable.
    case automatic
    /// Avahi's own client library (Linux only): one D-Bus connection to avahi-daemon per process, shared by
    /// every transceiver, browser and resolve in it, and resolves that return the address with the port and TXT
    /// record (no separate address query). Waits for the daemon when it is missing or restarts, and registers
    /// again.
    case avahi
    /// The `dns_sd.h` API: Bonjour on macOS, Avahi's Bonjour compatibility library on Linux (one D-Bus
    /// connection per browse, resolve, address query and registration).
    case dnsSD = "dns-sd"

    /// The environment variable that ``automatic`` reads.
    public static let environmentVariable = "CHIRP_DISCOVERY"

    public var description: String { rawValue }

    /// The backend this choice stands for on this machine: ``avahi`` or ``dnsSD``, never ``automatic``.
    /// ``avahi`` where it is not built (macOS) resolves to ``dnsSD``.
    public var resolved: DiscoveryBackend {
        switch self {
        case .avahi: return AvahiDiscovery.isAvailable ? .avahi : .dnsSD
        case .dnsSD: return .dnsSD
        case .automatic:
            if let value = getenv(Self.environmentVariable).map({ String(cString: $0) }), !value.isEmpty,
                let chosen = DiscoveryBackend(rawValue: value.lowercased()), chosen != .automatic
            {
                return chosen.resolved
            }
            return AvahiDiscovery.isAvailable ? .avahi : .dnsSD
        }
    }

    /// Starts connecting to the daemon in the background, when the backend keeps a connection (see
    /// ``Discovery/prepare()``).
    package func prepare() { implementation.prepare() }

    /// The implementation of the resolved choice.
    var implementation: any Discovery {
        switch resolved {
        case .avahi: return AvahiDiscovery.implementation ?? DNSSDDiscovery()
        case .dnsSD, .automatic: return DNSSDDiscovery()
        }
    }
}
