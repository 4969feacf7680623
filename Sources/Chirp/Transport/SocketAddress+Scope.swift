import ChirpSupport
import Foundation
import NIOCore

extension SocketAddress {
    /// The socket address of a scoped IPv6 address as discovery reports a link-local one (`fe80::1%eth0`), or `nil`
    /// for any other text (dialed as it is). NIO's `SocketAddress(ipAddress:port:)` takes no scope.
    static func scoped(_ host: String, port: Int) -> SocketAddress? {
        guard let percent = host.firstIndex(of: "%"), (0...Int(UInt16.max)).contains(port) else { return nil }
        let (ip, interface) = (String(host[..<percent]), String(host[host.index(after: percent)...]))
        var address = sockaddr_in6()
        guard inet_pton(AF_INET6, ip, &address.sin6_addr) == 1 else { return nil }
        let index = if_nametoindex(interface) != 0 ? if_nametoindex(interface) : UInt32(interface) ?? 0
        guard index != 0 else { return nil }
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_port = in_port_t(UInt16(port).bigEndian)
        address.sin6_scope_id = index
        return SocketAddress(address, host: host)
    }

    /// The address as Chirp prints it: `10.0.0.7:50123`, `[fd00::7]:50123`, `[fe80::7%eth0]:50123` (a link-local
    /// address with the interface of its scope, as `ping` takes it).
    var endpointText: String {
        guard let ip = ipAddress, let port else { return "\(self)" }
        guard case .v6(let v6) = self, v6.address.sin6_scope_id != 0 else {
            return IPAddressText.endpoint(ip, port: port)
        }
        var buffer = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
        let name =
            if_indextoname(v6.address.sin6_scope_id, &buffer) != nil
            ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            : String(v6.address.sin6_scope_id)
        return IPAddressText.endpoint(IPAddressText.scoped(ip, interface: name), port: port)
    }
}
