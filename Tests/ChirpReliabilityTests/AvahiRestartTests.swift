import Foundation
import Testing

/// The avahi-daemon of one host is restarted under a running peer.
extension FaultTests {
    @Suite struct AvahiRestartTests {
        /// From the daemon answering again to the peer advertising and browsing again (its retry backoff is at most a few
        /// seconds) and others connecting to it.
        static let boundMs = 15_000

        @Test(.netns) func aPeerReadvertisesAndRebrowsesByItselfAfterItsDaemonRestarts() async throws {
            let harness = try Harness(hosts: 3)
            defer { harness.tearDown() }
            let type = uniqueServiceType("r")
            let a = try await harness.probe(on: "h1", name: "a", service: type)
            let b = try await harness.probe(on: "h2", name: "b", service: type)
            try await a.waitConnected(to: ["b"])
            try await b.waitConnected(to: ["a"])
            try await b.waitFor("b advertised") { $0.event == "advertised" }

            let mark = b.mark
            let restartStarted = nowMs()
            try harness.run(["restart-avahi", "h2"])
            let answering = nowMs()
            measure("avahi.restart-script", answering - restartStarted)
            // b registers again by itself ...
            let advertised = try await b.waitFor(from: mark, timeout: 30, "b advertised again") {
                $0.event == "advertised"
            }
            measure("avahi.readvertised", advertised.ms - answering)
            #expect(advertised.ms - answering <= Self.boundMs)
            // ... and browses again: it sees a's instance anew.
            let found = try await b.waitFor(from: mark, timeout: 30, "b sees a again") {
                $0.event == "instanceFound" && ($0.instance ?? "").hasPrefix("a [")
            }
            measure("avahi.rebrowsed", found.ms - answering)
            #expect(found.ms - answering <= Self.boundMs)
            #expect(b.events.contains { $0.event == "discoveryUnavailable" }, "b was told that the daemon went away")
            // The connection between a and b never needed the daemon.
            #expect(!a.events.contains { $0.is("peerDisconnected", name: "b") })

            // Others see b again: a new peer on a third host finds b through discovery and connects.
            let started = nowMs()
            let d = try await harness.probe(on: "h3", name: "d", service: type)
            try await d.waitConnected(to: ["a", "b"], timeout: 30)
            let dConnected = d.events.first { $0.is("peerConnected", name: "b") }?.ms ?? started
            measure("avahi.new-peer-connects", dConnected - started)
            try await b.waitConnected(to: ["a", "d"], from: mark, timeout: 30)
            #expect(!b.sawDuplicatePeer)
            #expect(!a.sawDuplicatePeer)
        }
    }
}
