import Chirp
import Foundation
import Metrics
import MetricsTestKit
import NIOCore
import Testing

extension LiveTests {
    /// A transceiver's swift-metrics (Docs/Metrics.md), recorded by swift-metrics' own test factory.
    @Suite struct MetricsTests {
        @Test func aTransceiverCountsPeersFramesRequestsAndDisconnects() async throws {
            let type = uniqueServiceType()
            let metrics = TestMetrics()
            var aliceConfiguration = testConfiguration("alice", serviceType: type)
            aliceConfiguration.metricsFactory = metrics
            let alice = Transceiver(configuration: aliceConfiguration)
            let bob = Transceiver(configuration: testConfiguration("bob", serviceType: type))
            let received = Collected<String>()
            try bob.receive(AddItem.self) { item in received.append(item.title) }
            try bob.respond(to: Echo.self) { request, _ in Echo(text: request.text) }
            let (bobPeer, _) = try await Pair(alice: alice, bob: bob).connect()

            for index in 0..<10 { try await alice.send(AddItem(title: "\(index)"), to: bobPeer) }
            for index in 0..<3 { _ = try await alice.request(Echo(text: "\(index)"), to: bobPeer, as: Echo.self) }
            try await received.waitForCount(10)

            let service = [("service", type)]
            #expect(try metrics.expectCounter("chirp_connects_total", service).totalValue == 1)
            #expect(try metrics.expectGauge("chirp_peers_connected", service).lastValue == 1)
            #expect(try metrics.expectGauge("chirp_peers_available", service).lastValue == 1)
            // 10 messages and 3 requests out (and the handshake's frames); 3 replies in, at least.
            #expect(try metrics.expectCounter("chirp_frames_total", service + [("direction", "out")]).totalValue >= 13)
            // Frames read are counted when the read completes, which can come just after the last reply has resumed
            // the request: wait for it.
            let framesIn = try metrics.expectCounter("chirp_frames_total", service + [("direction", "in")])
            try await withTimeout(.seconds(20), "the replies to be counted") {
                while framesIn.totalValue < 3 { try await Task.sleep(for: .milliseconds(10)) }
            }
            #expect(
                try metrics.expectCounter("chirp_bytes_total", service + [("direction", "out")]).totalValue > 13 * 10)
            #expect(
                try metrics.expectCounter("chirp_requests_total", service + [("outcome", "answered")]).totalValue == 3)
            #expect(try metrics.expectTimer("chirp_request_duration_seconds", service).values.count == 3)

            // Bob stops: he says goodbye, and alice counts the reason.
            await bob.shutdown()
            let goodbyes = try metrics.expectCounter("chirp_disconnects_total", service + [("reason", "goodbye")])
            try await withTimeout(.seconds(20), "the goodbye to be counted") {
                while goodbyes.totalValue < 1 { try await Task.sleep(for: .milliseconds(10)) }
            }
            #expect(try metrics.expectGauge("chirp_peers_connected", service).lastValue == 0)
            #expect(
                try metrics.expectCounter("chirp_disconnects_total", service + [("reason", "lost")]).totalValue == 0)
            await alice.shutdown()
        }

        /// A transceiver with a `TestMetrics` of its own and `configure` applied, started, and shut down (awaited)
        /// after `body` on every path.
        static func withMetered(
            _ name: String, serviceType: String, configure: (inout Configuration) -> Void = { _ in },
            _ body: (Transceiver, TestMetrics) async throws -> Void
        ) async throws {
            let metrics = TestMetrics()
            var configuration = testConfiguration(name, serviceType: serviceType)
            configuration.metricsFactory = metrics
            configure(&configuration)
            let transceiver = Transceiver(configuration: configuration)
            try await withTeardown {
                try await body(transceiver, metrics)
            } teardown: {
                await transceiver.shutdown()
            }
        }

        /// A raw peer that has said hello to `transceiver` and is reported connected.
        static func helloedRawPeer(to transceiver: Transceiver, serviceType: String) async throws -> RawPeer {
            let peer = try await RawPeer(port: try #require(transceiver.port))
            try await peer.send(RawPeer.hello(service: serviceType))
            try await withTimeout(.seconds(20), "the raw peer to be reported connected") {
                while !transceiver.connectedPeers.contains(where: { $0.name == "raw" }) {
                    try await Task.sleep(for: .milliseconds(5))
                }
            }
            return peer
        }

        @Test func malformedFramesAfterAValidHelloAreCountedAsRefused() async throws {
            let type = uniqueServiceType()
            try await Self.withMetered("server", serviceType: type) { server, metrics in
                let named = Collected<Int>()
                try server.receive(Named.self) { message in named.append(message.value) }
                try await server.start()
                let refused = try metrics.expectCounter("chirp_frames_refused_total", [("service", type)])
                let peer = try await Self.helloedRawPeer(to: server, serviceType: type)
                #expect(refused.totalValue == 0, "a valid hello is not refused")

                try await peer.send(
                    RawPeer.frame(kind: 3, [0, 0xFF, 0xFF])  // a message whose type name runs past the frame's end
                        + RawPeer.frame(kind: 4, [0, 0, 0])  // a request shorter than its 8-byte id
                        + RawPeer.message(type: "tests.named", json: #"{"value":7}"#))  // and a valid message
                // Frames are handled in order: once the valid message is in, both malformed ones were handled.
                try await named.waitForCount(1)
                #expect(named.values == [7])
                #expect(refused.totalValue == 2)
                #expect(!peer.isClosed, "a refused frame is skipped; the peer stays connected")
                await peer.close()
            }
        }

        @Test func aSendThatFindsTheQueueFullIsCountedAsAnOutboundLimitHit() async throws {
            let type = uniqueServiceType()
            let configure: (inout Configuration) -> Void = { configuration in
                configuration.outboundLimit = 256 * 1024
                // The raw peer answers no heartbeat: it must not be dropped while the queue fills.
                configuration.heartbeatTimeout = .seconds(600)
            }
            try await Self.withMetered("server", serviceType: type, configure: configure) { server, metrics in
                try await server.start()
                let hits = try metrics.expectCounter("chirp_outbound_limit_hits_total", [("service", type)])
                let peer = try await Self.helloedRawPeer(to: server, serviceType: type)
                let raw = try #require(server.connectedPeers.first { $0.name == "raw" })
                // It reads no more: the sockets' buffers fill, then the server's queue.
                try await peer.channel.setOption(ChannelOptions.autoRead, value: false).get()

                // 64 KiB messages until three sends have been refused: at most 256 MiB, far more than the sockets'
                // buffers and the queue hold.
                let payload = Data(repeating: 0x61, count: 64 * 1024)
                var refusals = 0
                var accepted = 0
                var hitsBeforeTheFirstRefusal: Int64 = 0
                // The throwing send (the waiting one is what `async` code gets): a synchronous function calls it.
                func sendNow() throws { try server.send(payload, to: raw) }
                while refusals < 3, accepted < 4096 {
                    do {
                        try sendNow()
                        accepted += 1
                        if refusals == 0 { hitsBeforeTheFirstRefusal = hits.totalValue }
                    } catch let error as ChirpError where error.code == .outboundLimitExceeded {
                        refusals += 1
                    }
                }
                #expect(refusals == 3, "\(refusals) of \(accepted + refusals) sends refused")
                #expect(hitsBeforeTheFirstRefusal == 0, "a hit counted for a send that was accepted")
                #expect(hits.totalValue == Int64(refusals))
                await peer.close()
            }
        }

        @Test func requestsThatFailAreCountedAsFailedAndOnlyThose() async throws {
            let type = uniqueServiceType()
            // Bob does not advertise himself (a tool): alice lists him on request.
            let includesTools: (inout Configuration) -> Void = { $0.includesTools = true }
            try await Self.withMetered("alice", serviceType: type, configure: includesTools) { alice, metrics in
                // Only bob dials (alice cannot find him): one connection, no tie-break to retry a request on.
                var bobConfiguration = testConfiguration("bob", serviceType: type)
                bobConfiguration.advertises = false
                let bob = Transceiver(configuration: bobConfiguration)
                try bob.respond(to: Echo.self) { request, _ in Echo(text: request.text) }
                try bob.respond(to: Fails.self) { (_, _) throws -> Echo in throw CocoaError(.fileNoSuchFile) }
                try await alice.start()
                try await bob.start()
                try await withTeardown {
                    let bobPeer = try #require(try await alice.waitForConnectedPeers(1).first)
                    let service = [("service", type)]
                    let failed = try metrics.expectCounter("chirp_requests_total", service + [("outcome", "failed")])
                    let answered = try metrics.expectCounter(
                        "chirp_requests_total", service + [("outcome", "answered")])

                    // The control: an answered request counts as answered, not as failed.
                    _ = try await alice.request(Echo(text: "hello"), to: bobPeer, as: Echo.self)
                    #expect(answered.totalValue == 1 && failed.totalValue == 0)

                    // No responder for its type, then a responder that throws: each fails, and each is counted once.
                    await #expect(throws: ChirpError.self) {
                        _ = try await alice.request(Unanswered(), to: bobPeer, as: Echo.self)
                    }
                    #expect(failed.totalValue == 1)
                    await #expect(throws: ChirpError.self) {
                        _ = try await alice.request(Fails(), to: bobPeer, as: Echo.self)
                    }
                    #expect(failed.totalValue == 2)
                    #expect(answered.totalValue == 1)
                    #expect(try metrics.expectTimer("chirp_request_duration_seconds", service).values.count == 1)
                } teardown: {
                    await bob.shutdown()
                }
            }
        }

        @Test func eachDiscoveredInstanceIsCountedAsResolvedOnce() async throws {
            let type = uniqueServiceType()
            // Alice only browses: bob cannot find her and dial first (his connection would spare her the resolve).
            let browseOnly: (inout Configuration) -> Void = { $0.advertises = false }
            try await Self.withMetered("alice", serviceType: type, configure: browseOnly) { alice, metrics in
                try await alice.start()
                let resolves = try metrics.expectCounter("chirp_discovery_resolves_total", [("service", type)])
                #expect(resolves.totalValue == 0, "nothing to resolve on a service type of its own")

                let bob = Transceiver(configuration: testConfiguration("bob", serviceType: type))
                try await bob.start()
                try await withTeardown {
                    // Alice dials bob at the address the resolve gave: it was counted by then.
                    _ = try await alice.waitForConnectedPeers(1, timeout: 30)
                    #expect(resolves.totalValue == 1)
                } teardown: {
                    await bob.shutdown()
                }
            }
        }
    }
}
