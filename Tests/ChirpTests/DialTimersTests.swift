import Testing

@testable import Chirp

/// ``DialTimers``: a peer's dial timer is the one of the newest generation the table scheduled, whatever order the
/// engine's threads carry out the `scheduleDial` actions in.
@Suite(.timeLimit(.minutes(1))) struct DialTimersTests {
    @Test func aNewerGenerationReplacesTheTimerKept() {
        var timers = DialTimers<String>()
        #expect(timers.keep("first", generation: 1, for: "Z") == nil)
        #expect(timers.keep("second", generation: 2, for: "Z") == "first")  // the replaced one is cancelled
        #expect(timers.removeAll() == ["second"])
    }

    /// A close scheduled generation 1 and asked for a resolve; the answer scheduled generation 2 on another thread,
    /// which got to its timer first. Generation 2's timer stays; generation 1's is cancelled.
    @Test func anOlderGenerationCarriedOutLateDoesNotReplaceTheNewer() {
        var timers = DialTimers<String>()
        #expect(timers.keep("answer", generation: 2, for: "Z") == nil)
        #expect(timers.keep("close", generation: 1, for: "Z") == "close")
        #expect(timers.removeAll() == ["answer"])
        #expect(timers.removeAll().isEmpty)
    }

    @Test func eachPeerHasItsOwnTimer() {
        var timers = DialTimers<String>()
        #expect(timers.keep("y", generation: 2, for: "Y") == nil)
        #expect(timers.keep("z", generation: 1, for: "Z") == nil)
        #expect(Set(timers.removeAll()) == ["y", "z"])
    }
}
