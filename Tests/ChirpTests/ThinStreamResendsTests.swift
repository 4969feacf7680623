import NIOCore
import Testing

@testable import Chirp

extension LiveTests {
    /// Both ends of a connection resend a lost segment steadily while the connection carries little
    /// (``ThinStreamResends``): the dialer's socket and the acceptor's. What that does on a lossy link is in
    /// `LossTests` (make netns-test).
    @Suite struct ThinStreamResendsTests {
        @Test func bothEndsOfAConnectionResendSteadilyWhileThin() async throws {
            #if os(Linux)
            let pair = Pair()
            _ = try await pair.connect()
            try await withTeardown {
                var roles: [ConnectionRole] = []
                for transceiver in [pair.alice, pair.bob] {
                    let engine = try #require(transceiver.currentEngine)
                    for connection in engine.connections {
                        let value = try await connection.channel.getOption(ThinStreamResends.option).get()
                        #expect(value == 1, "\(connection.role): TCP_THIN_LINEAR_TIMEOUTS is \(value)")
                        roles.append(connection.role)
                    }
                }
                // One connection, seen from both ends: its dialer and its acceptor were both looked at.
                #expect(Set(roles) == [.dialer, .acceptor], "\(roles)")
            } teardown: {
                await pair.stop()
            }
            #endif
        }
    }
}
