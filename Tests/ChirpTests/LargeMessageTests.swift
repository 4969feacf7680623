import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import Chirp

extension LiveTests {
    /// A large message between two transceivers goes out in parts (Docs/Protocol.md section 3): a small request sent
    /// behind it reaches the peer's handler, and is answered, while the message is still on its way, not after it.
    ///
    /// The order in which bob's handlers run is the check: the request's frame overtakes the message's remaining
    /// parts whatever the machine's load. Comparing the request's round trip with the transfer's time would depend on
    /// the load too (on loopback the 32 MiB take 70-200 ms, and a reply crosses a busy event loop); the round trip on a
    /// slow link, against the link's own, is `LossTests.aRequestBehindALargeMessageOnASlowLinkIsNotHeldUpByIt`.
    @Suite struct LargeMessageTests {
        @Test func aSmallRequestSentBehindALargeMessageIsAnsweredBeforeTheMessageArrives() async throws {
            let pair = Pair()
            let clock = ContinuousClock()
            let order = NIOLockedValueBox<[String]>([])
            let large = Data(repeating: 0x5A, count: 32 << 20)
            let arrived = Collected<ContinuousClock.Instant>()
            try pair.bob.receive(Data.self) { data in
                order.withLockedValue { $0.append("data") }
                #expect(data.count == large.count)
                arrived.append(clock.now)
            }
            try pair.bob.respond(to: Echo.self) { echo, _ in
                order.withLockedValue { $0.append("request") }
                return Echo(text: echo.text)
            }
            let (bobPeer, _) = try await pair.connect()
            try await withTeardown {
                let start = clock.now
                try await pair.alice.send(large, to: bobPeer)  // queued: it goes out in parts of 128 KiB
                let reply = try await pair.alice.request(Echo(text: "small"), to: bobPeer, as: Echo.self)
                let roundTrip = clock.now - start
                #expect(reply.text == "small")
                try await arrived.waitForCount(1, timeout: 60)
                let transfer = try #require(arrived.values.first) - start
                // The request reached bob while the large message was in transit.
                #expect(order.withLockedValue { $0 } == ["request", "data"])
                FileHandle.standardError.write(
                    Data(
                        "measure large-message: 32 MiB in \(transfer); a request behind it answered in \(roundTrip)\n"
                            .utf8))
            } teardown: {
                await pair.stop()
            }
        }
    }
}
