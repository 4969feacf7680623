import Chirp
import Testing

// MultipeerKit's README snippet, with only the import, the type names and `try` changed:
//
//     let transceiver = MultipeerTransceiver()
//     transceiver.resume()
//     transceiver.receive(SomeCodableThing.self) { payload in
//         print("Got my thing! \(payload)")
//     }
//     transceiver.broadcast(payload)
struct SomeCodableThing: Codable, Sendable { var text = "thing" }

/// The snippet as a user ports it, compiled in an `async` function (where the names must still resolve to the
/// synchronous calls), never run: `Transceiver()` would join the default service type on every interface.
func multipeerKitReadmeSnippet(payload: SomeCodableThing) async throws {
    let transceiver = Transceiver()
    try transceiver.resume()
    try transceiver.receive(SomeCodableThing.self) { payload in
        print("Got my thing! \(payload)")
    }
    try transceiver.broadcast(payload)
}

extension LiveTests {
    @Suite(.timeLimit(.minutes(2))) struct MultipeerKitCompatibilityTests {
        /// The snippet's calls, run: a second transceiver receives what it broadcasts.
        @Test func theReadmeSnippetsBroadcastReachesAnotherTransceiver() async throws {
            let type = uniqueServiceType()
            let other = Transceiver(configuration: testConfiguration("other", serviceType: type))
            let received = Collected<String>()
            try other.receive(SomeCodableThing.self) { thing, sender in
                received.append("\(thing.text) from \(sender.name)")
            }
            try await other.start()

            // The snippet, with this test's service type on loopback instead of the defaults.
            let payload = SomeCodableThing()
            let transceiver = Transceiver(configuration: testConfiguration("snippet", serviceType: type))
            try transceiver.resume()
            try transceiver.receive(SomeCodableThing.self) { payload in
                print("Got my thing! \(payload)")
            }
            // The README broadcasts at once, to whoever is connected then; the test waits for a peer to hear it.
            _ = try await transceiver.waitForConnectedPeers(1)
            try transceiver.broadcast(payload)

            try await received.waitForCount(1)
            #expect(received.values == ["thing from snippet"])
            await transceiver.shutdown()
            await other.shutdown()
        }
    }
}
