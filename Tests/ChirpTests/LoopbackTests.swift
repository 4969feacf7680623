import Chirp
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

/// Loopback-only mode (`Configuration.interface = .loopback`): reachable on 127.0.0.1 and ::1, on one port, and on no
/// other address of this host.
extension LiveTests {
    @Suite struct LoopbackTests {
        @Test func aLoopbackOnlyTransceiverAcceptsPeersOnIPv6LoopbackAndNoOtherAddress() async throws {
            let type = uniqueServiceType()
            let inboundAddresses = NIOLockedValueBox<[String]>([])
            var configuration = testConfiguration("app", serviceType: type)
            configuration.acceptPolicy = { candidate in
                if candidate.isInbound { inboundAddresses.withLockedValue { $0.append(candidate.address) } }
                return true
            }
            let app = Transceiver(configuration: configuration)
            let received = Collected<String>()
            try app.receive(Marker.self) { marker in received.append(marker.text) }
            try await app.start()
            let port = try #require(app.port)

            // A peer dials [::1]:port at once, before discovery could have connected the two over IPv4.
            let client = Transceiver(configuration: testConfiguration("client", serviceType: type))
            try await client.start()
            let appPeer = try await withTimeout(.seconds(20), "a connection to [::1]:\(port)") {
                try await client.connect(host: "::1", port: port)
            }
            #expect(appPeer.name == "app")
            #expect(
                inboundAddresses.withLockedValue { $0 }.contains { $0.hasPrefix("[::1]:") },
                "\(inboundAddresses.withLockedValue { $0 })")
            try await client.send(Marker(text: "over ::1"), to: appPeer)
            try await received.waitForCount(1)
            #expect(received.values == ["over ::1"])

            // 127.0.0.1 on the same port answers too; this host's other addresses do not.
            #expect(await Self.tcpConnects(host: "127.0.0.1", port: port))
            #expect(await Self.tcpConnects(host: "::1", port: port))
            let others = Self.nonLoopbackAddresses()
            for address in others {
                #expect(!(await Self.tcpConnects(host: address, port: port)), "reachable on \(address):\(port)")
            }

            await client.shutdown()
            await app.shutdown()
            // Both listeners are closed on stop.
            #expect(!(await Self.tcpConnects(host: "127.0.0.1", port: port)))
            #expect(!(await Self.tcpConnects(host: "::1", port: port)))
        }

        /// A transceiver on any address listens on IPv4 and IPv6 (`0.0.0.0` and `::`, `IPV6_V6ONLY`) on one port: a
        /// host with IPv6 only reaches it as well as one with IPv4. (On the loopback interface's addresses here; the
        /// multi-host IPv6 tests are ChirpReliabilityTests' IPv6Tests.)
        @Test func aTransceiverListensOnIPv4AndIPv6OnOnePort() async throws {
            var configuration = testConfiguration("both", serviceType: uniqueServiceType())
            configuration.interface = .named("lo")  // advertised on loopback only; it listens on every address
            let app = Transceiver(configuration: configuration)
            try await app.start()
            let port = try #require(app.port)
            #expect(await Self.tcpConnects(host: "127.0.0.1", port: port))
            #expect(await Self.tcpConnects(host: "::1", port: port))
            await app.shutdown()
            #expect(!(await Self.tcpConnects(host: "127.0.0.1", port: port)))
            #expect(!(await Self.tcpConnects(host: "::1", port: port)))
        }

        /// Whether a TCP connection to `host:port` is accepted (within 5 s).
        static func tcpConnects(host: String, port: Int) async -> Bool {
            do {
                let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                    .connectTimeout(.seconds(5))
                    .connect(host: host, port: port).get()
                try? await channel.close()
                return true
            } catch {
                return false
            }
        }

        /// This host's addresses outside loopback (IPv4, and IPv6 but link-local ones, which need a scope).
        static func nonLoopbackAddresses() -> [String] {
            var list: UnsafeMutablePointer<ifaddrs>?
            guard getifaddrs(&list) == 0, let first = list else { return [] }
            defer { freeifaddrs(list) }
            var addresses: [String] = []
            var cursor: UnsafeMutablePointer<ifaddrs>? = first
            while let entry = cursor {
                defer { cursor = entry.pointee.ifa_next }
                guard let address = entry.pointee.ifa_addr, entry.pointee.ifa_flags & UInt32(IFF_LOOPBACK) == 0 else {
                    continue
                }
                let family = Int32(address.pointee.sa_family)
                guard family == AF_INET || family == AF_INET6 else { continue }
                var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
                let length = socklen_t(
                    family == AF_INET ? MemoryLayout<sockaddr_in>.size : MemoryLayout<sockaddr_in6>.size)
                guard getnameinfo(address, length, &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST) == 0 else {
                    continue
                }
                let text = String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                if text.lowercased().hasPrefix("fe80") || text.contains("%") { continue }
                addresses.append(text)
            }
            return addresses
        }
    }
}
