import NIOCore
import Testing

@testable import Chirp
@testable import ChirpSupport

/// Addresses as Chirp dials and prints them: link-local IPv6 with its scope, IPv6 endpoints in brackets, and the order
/// in which a host's addresses are dialed (IPv4, global IPv6, link-local IPv6).
@Suite(.timeLimit(.minutes(1))) struct IPAddressTextTests {
    @Test(arguments: [
        ("fe80::1", true), ("FE80::abcd:1", true), ("febf::1", true), ("fec0::1", false), ("fe80::1%eth0", true),
        ("fd00:213:1::2", false), ("2001:db8::1", false), ("::1", false), ("10.0.0.1", false), ("fe8::1", false)
    ])
    func linkLocalIsFE80Slash10(_ address: String, _ expected: Bool) {
        #expect(IPAddressText.isLinkLocal(address) == expected)
    }

    @Test func onlyLinkLocalAddressesGetAScope() {
        #expect(IPAddressText.scoped("fe80::1", interface: "eth0") == "fe80::1%eth0")
        #expect(IPAddressText.scoped("fe80::1%eth1", interface: "eth0") == "fe80::1%eth1")
        #expect(IPAddressText.scoped("fe80::1", interface: nil) == "fe80::1")
        #expect(IPAddressText.scoped("fd00::1", interface: "eth0") == "fd00::1")
        #expect(IPAddressText.scoped("10.0.0.1", interface: "eth0") == "10.0.0.1")
    }

    @Test func endpointsPutIPv6InBrackets() {
        #expect(IPAddressText.endpoint("10.0.0.7", port: 5) == "10.0.0.7:5")
        #expect(IPAddressText.endpoint("fd00::7", port: 5) == "[fd00::7]:5")
        #expect(IPAddressText.endpoint("fe80::7%eth0", port: 50123) == "[fe80::7%eth0]:50123")
    }

    @Test func theAddressOfAnEndpointIsWhatComesBeforeItsPort() {
        #expect(IPAddressText.host(ofEndpoint: "10.0.0.7:5") == "10.0.0.7")
        #expect(IPAddressText.host(ofEndpoint: "[fd00::7]:5") == "fd00::7")
        #expect(IPAddressText.host(ofEndpoint: "[fe80::7%eth0]:50123") == "fe80::7%eth0")
        // Without a port: as it is.
        #expect(IPAddressText.host(ofEndpoint: "10.0.0.7") == "10.0.0.7")
        #expect(IPAddressText.host(ofEndpoint: "fe80::1") == "fe80::1")
        #expect(IPAddressText.host(ofEndpoint: "fd00::1:2") == "fd00::1:2")
    }

    @Test func dialingOrderIsIPv4ThenGlobalThenLinkLocal() {
        let order = IPAddressText.dialingOrder(["fe80::2%eth0", "fd00::2", "10.0.0.2", "fe80::3%eth1", "2001:db8::2"])
        #expect(order == ["10.0.0.2", "fd00::2", "2001:db8::2", "fe80::2%eth0", "fe80::3%eth1"])
        #expect(IPAddressText.dialingOrder([]) == [])
    }

    @Test func aScopedAddressBecomesASocketAddressWithItsInterfaceIndex() throws {
        let address = try #require(SocketAddress.scoped("fe80::1%lo", port: 4242))
        guard case .v6(let v6) = address else {
            Issue.record("not IPv6: \(address)")
            return
        }
        #expect(v6.address.sin6_scope_id != 0)
        #expect(address.port == 4242)
        #expect(address.endpointText == "[fe80::1%lo]:4242")
        // Unscoped or unknown: dialed as text.
        #expect(SocketAddress.scoped("fe80::1", port: 1) == nil)
        #expect(SocketAddress.scoped("fe80::1%no-such-interface", port: 1) == nil)
        #expect(SocketAddress.scoped("10.0.0.1", port: 1) == nil)
    }
}
