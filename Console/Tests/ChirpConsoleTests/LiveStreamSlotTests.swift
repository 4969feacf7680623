import NIOConcurrencyHelpers
import Testing

@testable import ChirpConsole

/// The live streams' places: each is given back once, whether its stream ran or its response was dropped unsent.
@Suite(.timeLimit(.minutes(1))) struct LiveStreamSlotTests {
    @Test func aPlaceComesBackWhenItsStreamEndsOrItsResponseIsDropped() {
        let streams = NIOLockedValueBox(0)
        let first = LiveStreamSlot(among: streams, maximum: 2)
        var second = LiveStreamSlot(among: streams, maximum: 2)
        #expect(first != nil && second != nil)
        #expect(LiveStreamSlot(among: streams, maximum: 2) == nil)  // full
        // A stream that ran and ended: released once, however often it says so.
        first?.release()
        first?.release()
        #expect(streams.withLockedValue { $0 } == 1)
        // A response dropped before its body ran (the client left first): its place comes back all the same.
        second = nil
        #expect(second == nil)
        #expect(streams.withLockedValue { $0 } == 0)
        #expect(LiveStreamSlot(among: streams, maximum: 2) != nil)  // the new slot is dropped at once, too
        #expect(streams.withLockedValue { $0 } == 0)
        _ = first
    }
}
