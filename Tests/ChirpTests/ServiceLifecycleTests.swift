import Chirp
import Foundation
import Logging
import ServiceLifecycle
import Testing

extension LiveTests {
    /// A transceiver in swift-service-lifecycle's `ServiceGroup`, as an app runs it beside its HTTP server.
    @Suite struct ServiceLifecycleTests {
        /// The app joins the service while the group runs; a graceful shutdown stops it, and its peers see it leave.
        @Test func aTransceiverRunsInAServiceGroupAndSaysGoodbyeOnGracefulShutdown() async throws {
            let type = uniqueServiceType()
            let app = Transceiver(configuration: testConfiguration("app", serviceType: type))
            var observerConfiguration = testConfiguration("observer", serviceType: type)
            observerConfiguration.heartbeatTimeout = .seconds(120)  // only the app's goodbye (or its close) ends it
            let observer = Transceiver(configuration: observerConfiguration)
            let seen = EventRecorder(observer)
            try await observer.start()

            let group = ServiceGroup(configuration: .init(services: [app], logger: testLogger("group")))
            let running = Task { try await group.run() }
            _ = try await observer.waitForConnectedPeers(1)
            #expect(app.port != nil)

            await group.triggerGracefulShutdown()
            try await running.value
            _ = try await seen.waitFor("app disconnected") {
                if case .peerDisconnected(let peer) = $0 { peer.name == "app" } else { false }
            }
            #expect(app.port == nil, "stopped when run() returned")
            await observer.shutdown()
        }

        @Test func cancellingTheTaskStopsTheTransceiver() async throws {
            let app = Transceiver(configuration: testConfiguration("app", serviceType: uniqueServiceType()))
            let running = Task { try await app.run() }
            try await withTimeout(.seconds(20), "the app to listen") {
                while app.port == nil { try await Task.sleep(for: .milliseconds(10)) }
            }
            running.cancel()
            try await running.value
            #expect(app.port == nil)
        }
    }
}
