import NIOCore
import Testing

@testable import Chirp

/// The state of our requests and pings on one connection, as a value: events in, actions out, the time given by the
/// test. No channel, no timer: what the handler does with the actions is PeerChannelHandlerTests' part.
@Suite(.timeLimit(.minutes(1))) struct ExchangeStateTests {
    typealias State = ExchangeState<String, String>

    static let start = NIODeadline.uptimeNanoseconds(1_000_000_000)

    static func at(seconds: Int64) -> NIODeadline { start + .seconds(seconds) }

    /// A short, comparable form of a ``ExchangeState/Start``.
    static func describe(_ start: State.Start<String>) -> String {
        switch start {
        case .waiting: return "waiting"
        case .waitingArmTimer(let deadline): return "arm \((deadline - Self.start).nanoseconds / 1_000_000_000) s"
        case .refused(let waiter): return "refused \(waiter)"
        }
    }

    @Test func theTimerIsArmedForTheEarliestDeadlineAndBroughtForwardOnly() {
        var state = State()
        #expect(Self.describe(state.startRequest(1, "r1", timeout: .seconds(20), now: Self.start)) == "arm 20 s")
        #expect(Self.describe(state.startPing(2, "p2", timeout: .seconds(30), now: Self.start)) == "waiting")
        #expect(Self.describe(state.startRequest(3, "r3", timeout: .seconds(5), now: Self.start)) == "arm 5 s")
        #expect(state.timerDeadline == Self.at(seconds: 5))
        #expect(state.count == 3)
    }

    @Test func answersResolveTheirWaiterOnceAndUnknownIDsAreIgnored() {
        var state = State()
        _ = state.startRequest(1, "r1", timeout: .seconds(10), now: Self.start)
        _ = state.startPing(1, "p1", timeout: .seconds(10), now: Self.start)  // a ping's ids are its own
        #expect(state.responseArrived(1) == "r1")
        #expect(state.responseArrived(1) == nil)  // a second answer
        #expect(state.responseArrived(99) == nil)  // one nobody asked for
        #expect(state.pongArrived(1) == "p1")
        #expect(state.isEmpty)
        // An answered exchange leaves the timer as it is: it finds nothing to fail when it fires.
        #expect(state.timerDeadline == Self.at(seconds: 10))
        let expiry = state.timerFired(now: Self.at(seconds: 10))
        #expect(expiry.requests.isEmpty && expiry.pings.isEmpty && expiry.nextTimer == nil)
        #expect(state.timerDeadline == nil)
    }

    @Test func theTimerFailsWhatPassedItsDeadlineAndIsArmedAgainForWhatIsLeft() {
        var state = State()
        _ = state.startRequest(2, "r2", timeout: .seconds(20), now: Self.start)
        _ = state.startRequest(3, "r3", timeout: .seconds(5), now: Self.start)
        _ = state.startPing(4, "p4", timeout: .seconds(12), now: Self.start)
        _ = state.startRequest(5, "r5", timeout: .seconds(5), now: Self.start)
        var expiry = state.timerFired(now: Self.at(seconds: 5))
        #expect(expiry.requests == ["r3", "r5"])  // in the order of their ids
        #expect(expiry.pings.isEmpty)
        #expect(expiry.nextTimer == Self.at(seconds: 12))
        #expect(state.timerDeadline == Self.at(seconds: 12))
        expiry = state.timerFired(now: Self.at(seconds: 12))
        #expect(expiry.requests.isEmpty && expiry.pings == ["p4"] && expiry.nextTimer == Self.at(seconds: 20))
        expiry = state.timerFired(now: Self.at(seconds: 20))
        #expect(expiry.requests == ["r2"] && expiry.nextTimer == nil)
        #expect(state.isEmpty && state.timerDeadline == nil)
        // A late answer to an expired request is one nobody waits on.
        #expect(state.responseArrived(2) == nil)
    }

    @Test func anAbandonedExchangeIsGivenBackOnceAndAnIDInUseIsRefused() {
        var state = State()
        _ = state.startRequest(1, "r1", timeout: .seconds(10), now: Self.start)
        #expect(
            Self.describe(state.startRequest(1, "again", timeout: .seconds(10), now: Self.start)) == "refused again")
        #expect(state.requestAbandoned(1) == "r1")
        #expect(state.requestAbandoned(1) == nil)
        _ = state.startPing(2, "p2", timeout: .seconds(10), now: Self.start)
        #expect(state.pingAbandoned(2) == "p2")
        #expect(state.pingAbandoned(2) == nil)
        #expect(state.isEmpty)
    }

    @Test func theCloseFailsEverythingCancelsTheTimerAndRefusesWhatComesAfter() {
        var state = State()
        _ = state.startRequest(2, "r2", timeout: .seconds(10), now: Self.start)
        _ = state.startRequest(1, "r1", timeout: .seconds(10), now: Self.start)
        _ = state.startPing(3, "p3", timeout: .seconds(10), now: Self.start)
        let closing = state.close(handedOver: HandedOver(bytes: 0))
        #expect(closing.requests.map(\.waiter) == ["r1", "r2"] && closing.pings == ["p3"] && closing.cancelTimer)
        #expect(state.isEmpty && state.timerDeadline == nil)
        #expect(Self.describe(state.startRequest(4, "r4", timeout: .seconds(1), now: Self.start)) == "refused r4")
        #expect(Self.describe(state.startPing(5, "p5", timeout: .seconds(1), now: Self.start)) == "refused p5")
        // Control: with nothing armed, the close has no timer to cancel.
        var idle = State()
        let idleClosing = idle.close(handedOver: HandedOver(bytes: 0))
        #expect(!idleClosing.cancelTimer)
    }

    /// At the close, a request whose frame ends within the bytes handed to the socket was sent (the peer may have run
    /// it); one whose frame was still queued, or not queued yet, was not.
    @Test func theCloseSaysWhichRequestsReachedTheSocket() {
        var state = State()
        _ = state.startRequest(1, "written", timeout: .seconds(10), now: Self.start)
        state.requestQueued(1, through: 100)
        _ = state.startRequest(2, "exactly written", timeout: .seconds(10), now: Self.start)
        state.requestQueued(2, through: 250)
        _ = state.startRequest(3, "still queued", timeout: .seconds(10), now: Self.start)
        state.requestQueued(3, through: 251)
        _ = state.startRequest(4, "not queued", timeout: .seconds(10), now: Self.start)
        let closing = state.close(handedOver: HandedOver(bytes: 250))
        #expect(closing.requests.map(\.waiter) == ["written", "exactly written", "still queued", "not queued"])
        #expect(closing.requests.map(\.delivery) == [.sent, .sent, .notSent, .notSent])
    }

    @Test func aTimerThatCouldNotBeArmedIsArmedByTheNextExchange() {
        var state = State()
        _ = state.startRequest(1, "r1", timeout: .seconds(10), now: Self.start)
        state.timerNotArmed()
        #expect(Self.describe(state.startRequest(2, "r2", timeout: .seconds(20), now: Self.start)) == "arm 20 s")
    }
}
