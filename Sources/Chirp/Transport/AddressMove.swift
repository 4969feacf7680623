import ChirpSupport

/// Whether a peer has moved away from the address one of our connections to it goes to: its new advertisement no
/// longer lists that address, which the one before did. A host that got a new address (DHCP after a reconnect), or lost
/// the interface it was reached on, keeps its advertisement; only its addresses change. The connection to the old
/// address is then dead, or about to be: ``PeerTable`` closes it at once instead of waiting for the heartbeat, and
/// redials where the peer is now.
///
/// Addresses compare without their ports (an accepted connection comes from the peer's ephemeral port, not the one
/// it listens on). An advertisement without addresses says nothing, and a connection to an address that was never
/// advertised (the peer dialed us from an address it does not advertise) is not judged.
///
/// Nor is an advertisement without an address of the connection's kind (IPv4, global IPv6, link-local IPv6): a
/// resolve answers one family at a time, and when the IPv4 answer is late, discovery reports the peer with its IPv6
/// addresses only. A host whose link-local IPv6 address came up after it was first resolved is re-announced that way;
/// that says nothing about the IPv4 address a connection goes to (a load run on namespace hosts had a live IPv4
/// connection closed, and its messages lost, by such a report).
enum AddressMove {
    /// - Parameters:
    ///   - remote: the connection's far end, `ip:port` (``IPAddressText/endpoint(_:port:)``).
    ///   - advertisedBefore: the addresses the peer advertised before, `ip:port`.
    ///   - advertisedNow: the addresses it advertises now.
    static func abandons(remote: String, advertisedBefore: [String], advertisedNow: [String]) -> Bool {
        guard !advertisedNow.isEmpty else { return false }
        let address = IPAddressText.host(ofEndpoint: remote)
        let before = Set(advertisedBefore.map(IPAddressText.host(ofEndpoint:)))
        let kind = IPAddressText.preference(address)
        let now = Set(
            advertisedNow.map(IPAddressText.host(ofEndpoint:)).filter { IPAddressText.preference($0) == kind })
        return !now.isEmpty && before.contains(address) && !now.contains(address)
    }
}
