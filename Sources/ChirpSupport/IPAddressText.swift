/// IP addresses as Chirp dials and prints them: a link-local IPv6 address carries its scope (`fe80::1%eth0`, without
/// which it cannot be dialed), an IPv6 endpoint has brackets (`[fe80::1%eth0]:50123`, as `ping`, `ssh` and URLs take
/// them), and a host's addresses are dialed IPv4 first, then global IPv6, then link-local IPv6. Pure text: no lookups.
/// `package`: discovery, the transport and the command-line tools use it.
package enum IPAddressText {
    /// Whether `address` is IPv6 (it has a colon; IPv4 text has none).
    package static func isIPv6(_ address: String) -> Bool { address.contains(":") }

    /// Whether `address` is a link-local IPv6 address (`fe80::/10`), with or without a scope.
    package static func isLinkLocal(_ address: String) -> Bool {
        guard isIPv6(address), let first = address.split(separator: ":", omittingEmptySubsequences: false).first,
            first.count == 4, let group = UInt16(first, radix: 16)
        else { return false }
        return group & 0xffc0 == 0xfe80
    }

    /// `address` with `%interface` appended when it is a link-local IPv6 address that has no scope yet and `interface`
    /// is known; otherwise `address` unchanged.
    package static func scoped(_ address: String, interface: String?) -> String {
        guard let interface, !interface.isEmpty, isLinkLocal(address), !address.contains("%") else { return address }
        return "\(address)%\(interface)"
    }

    /// `address:port`, with brackets around an IPv6 address: `10.0.0.7:50123`, `[fe80::1%eth0]:50123`.
    package static func endpoint(_ address: String, port: Int) -> String {
        isIPv6(address) ? "[\(address)]:\(port)" : "\(address):\(port)"
    }

    /// The address of an endpoint written by ``endpoint(_:port:)`` (`10.0.0.7:50123`, `[fe80::1%eth0]:50123`): the
    /// text before the port, without brackets. Text without a port comes back as it is.
    package static func host(ofEndpoint endpoint: String) -> String {
        if endpoint.hasPrefix("["), let close = endpoint.firstIndex(of: "]") {
            return String(endpoint[endpoint.index(after: endpoint.startIndex)..<close])
        }
        // IPv4 with a port has one colon; a bare IPv6 address has two or more.
        guard endpoint.utf8.lazy.filter({ $0 == UInt8(ascii: ":") }).count == 1, let colon = endpoint.lastIndex(of: ":")
        else { return endpoint }
        return String(endpoint[..<colon])
    }

    /// The order in which a host's addresses are dialed: 0 for IPv4 (every Chirp listener takes it), 1 for a global
    /// (or unique local) IPv6 address, 2 for a link-local one (it works only on the interface of its scope).
    package static func preference(_ address: String) -> Int {
        if !isIPv6(address) { return 0 }
        return isLinkLocal(address) ? 2 : 1
    }

    /// `addresses` in dialing order (``preference(_:)``), keeping the order they came in within each rank.
    package static func dialingOrder(_ addresses: [String]) -> [String] {
        addresses.enumerated().sorted { a, b in
            let (left, right) = (preference(a.element), preference(b.element))
            return left != right ? left < right : a.offset < b.offset
        }.map(\.element)
    }
}
