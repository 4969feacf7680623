import NIOCore
import Testing

@testable import Chirp

/// The heartbeat's look at whether this host still has a connection's local address (`LocalAddress`).
@Suite(.timeLimit(.minutes(1))) struct LocalAddressTests {
    @Test(arguments: [
        // the connection's local address, this host's addresses, gone
        ("10.0.0.2", ["127.0.0.1", "10.0.0.2"], false),
        ("10.0.0.2", ["127.0.0.1", "10.0.0.102"], true),  // readdressed
        ("10.0.0.2", [], false),  // nothing listed: cannot tell
        ("fe80::1", ["fe80::1", "10.0.0.2"], false)
    ])
    func anAddressNoInterfaceHasIsGone(ip: String, addresses: [String], gone: Bool) {
        #expect(LocalAddress.isGone(ip, among: addresses) == gone)
    }

    @Test(arguments: [
        // the connection's local address, this host's addresses, those on interfaces up with a link, gone
        ("10.0.0.2", ["127.0.0.1", "10.0.0.2", "10.1.0.2"], ["127.0.0.1", "10.0.0.2", "10.1.0.2"], false),
        ("10.0.0.2", ["127.0.0.1", "10.0.0.2", "10.1.0.2"], ["127.0.0.1", "10.1.0.2"], true),  // its interface is down
        ("10.0.0.2", [], [], false)  // nothing listed: cannot tell
    ])
    func anAddressOnAnInterfaceThatIsDownIsGone(ip: String, addresses: [String], usable: [String], gone: Bool) {
        #expect(LocalAddress.isGone(ip, among: addresses, usable: usable) == gone)
    }

    @Test func loopbackIsThereAndAnAddressOfNoInterfaceIsNot() throws {
        #expect(!LocalAddress.isGone(try SocketAddress(ipAddress: "127.0.0.1", port: 1)))
        #expect(LocalAddress.isGone(try SocketAddress(ipAddress: "192.0.2.213", port: 1)))  // TEST-NET-1
    }
}
