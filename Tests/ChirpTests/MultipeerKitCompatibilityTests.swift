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

extension LiveTests {
    @Suite struct MultipeerKitCompatibilityTests {
        @Test func theReadmeSnippetCompilesAndRuns() throws {
            let payload = SomeCodableThing()
            func snippet() throws {
                let transceiver = Transceiver()
                try transceiver.resume()
                transceiver.receive(SomeCodableThing.self) { payload in
                    print("Got my thing! \(payload)")
                }
                try transceiver.broadcast(payload)
                transceiver.stop()
            }
            try snippet()
        }
    }
}
