import Chirp
import Foundation
import NIOCore
import NIOPosix
import Testing

/// A live listener fed garbage, oversize frames and stalled connections keeps serving its good peer.
extension LiveTests {
    @Suite struct HostileInputTests {
        /// Opens a raw TCP connection to `port` and writes `bytes` (if any).
        func rawConnection(port: Int, sending bytes: [UInt8]) async throws -> any Channel {
            let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connect(host: "127.0.0.1", port: port).get()
            if !bytes.isEmpty { try await channel.writeAndFlush(ByteBuffer(bytes: bytes)) }
            return channel
        }

        func hello(service: String, id: String = UUID().uuidString) -> [UInt8] {
            let json = Array(
                #"{"protocol":1,"peerID":"\#(id)","name":"intruder","service":"\#(service)","metadata":{}}"#.utf8)
            return lengthPrefixed(kind: 1, json)
        }

        func lengthPrefixed(kind: UInt8, _ body: [UInt8]) -> [UInt8] {
            let length = UInt32(body.count + 1)
            return withUnsafeBytes(of: length.bigEndian, Array.init) + [kind] + body
        }

        @Test func garbageOversizeAndStalledConnectionsAreDroppedWhileAGoodPeerIsServed() async throws {
            let type = uniqueServiceType()
            var serverConfiguration = testConfiguration("server", serviceType: type)
            serverConfiguration.handshakeTimeout = .seconds(1)
            serverConfiguration.maximumMessageSize = 64 * 1024
            let server = Transceiver(configuration: serverConfiguration)
            let good = Transceiver(configuration: testConfiguration("good", serviceType: type))
            let received = Collected<String>()
            try server.receive(AddItem.self) { item in received.append(item.title) }
            try await server.start()
            try await good.start()
            let serverPeer = try #require(try await good.waitForConnectedPeers(1).first)
            let port = try #require(server.port)

            var random = SystemRandomNumberGenerator()
            let garbage = (0..<4096).map { _ in UInt8.random(in: 0...255, using: &random) }
            var oversizeAfterHello = hello(service: type)
            oversizeAfterHello += withUnsafeBytes(of: UInt32(1 << 30).bigEndian, Array.init)
            var malformedFramesAfterHello = hello(service: type)
            malformedFramesAfterHello += lengthPrefixed(kind: 3, [0, 0xff, 0xff])  // type name longer than the frame
            malformedFramesAfterHello += lengthPrefixed(kind: 0x7f, [1, 2, 3])  // unknown kind: skipped
            let hostile: [(String, [UInt8])] = [
                ("random bytes", garbage),
                ("an HTTP request", Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8)),
                ("a 4 GiB length", [0xff, 0xff, 0xff, 0xff]),
                ("a hello for another service", hello(service: "other")),
                ("an oversize frame after a valid hello", oversizeAfterHello),
                ("nothing at all (stalled)", []),
                ("half a hello (stalled)", Array(hello(service: type).prefix(10)))
            ]
            var channels: [(String, any Channel)] = []
            for (what, bytes) in hostile {
                channels.append((what, try await rawConnection(port: port, sending: bytes)))
                try await good.send(AddItem(title: "during \(what)"), to: serverPeer)
            }
            let survivor = try await rawConnection(port: port, sending: malformedFramesAfterHello)

            for (what, channel) in channels {
                try await withTimeout(.seconds(10), "the server to drop \(what)") {
                    try await channel.closeFuture.get()
                }
            }
            try await good.send(AddItem(title: "after"), to: serverPeer)
            try await received.waitForCount(hostile.count + 1)
            #expect(received.values == hostile.map { "during \($0.0)" } + ["after"])
            #expect(server.connectedPeers.map(\.name).contains("good"))
            // Malformed frames are skipped, not fatal: that intruder completed its handshake and is still connected.
            #expect(survivor.isActive)
            try await survivor.close()
            await good.shutdown()
            await server.shutdown()
        }

        @Test func aPeerThatIsNotChirpIsRetriedWithBackoffWithoutDelayingGoodPeers() async throws {
            // A "peer" advertised under the service type whose port answers with garbage.
            let type = uniqueServiceType()
            let liar = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .childChannelInitializer { channel in
                    channel.writeAndFlush(ByteBuffer(string: "SSH-2.0-OpenSSH_9.2\r\n")).flatMap { channel.close() }
                }
                .bind(host: "127.0.0.1", port: 0).get()
            let liarPort = try #require(liar.localAddress?.port)
            let publisher = try await TestProcess(
                "/usr/bin/avahi-publish",
                [
                    "-s", "liar", "_\(type)._tcp", "\(liarPort)", "id=LIAR", "name=liar", "pv=1"
                ], name: "avahi-publish")
            defer { publisher.kill() }

            let alice = Transceiver(configuration: testConfiguration("alice", serviceType: type))
            let bob = Transceiver(configuration: testConfiguration("bob", serviceType: type))
            try await alice.start()
            try await bob.start()
            try await alice.waitForConnectedPeers(1)
            #expect(alice.connectedPeers.map(\.name) == ["bob"])
            // The liar shows up as a discovered but unconnected peer.
            try await withTimeout(.seconds(10), "the liar to be discovered") {
                while !alice.availablePeers.contains(where: { $0.name == "liar" }) {
                    try await Task.sleep(for: .milliseconds(50))
                }
            }
            #expect(alice.availablePeers.first { $0.name == "liar" }?.isConnected == false)
            await alice.shutdown()
            await bob.shutdown()
            try await liar.close()
        }
    }
}
