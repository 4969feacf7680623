import Chirp
import Foundation
import Metrics
import MetricsTestKit
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
            bob.receive(AddItem.self) { item in received.append(item.title) }
            bob.respond(to: Echo.self) { request, _ in Echo(text: request.text) }
            try await alice.start()
            try await bob.start()
            let bobPeer = try #require(try await alice.waitForConnectedPeers(1).first)
            _ = try await bob.waitForConnectedPeers(1)

            for index in 0..<10 { try alice.send(AddItem(title: "\(index)"), to: bobPeer) }
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
    }
}
