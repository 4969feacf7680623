import NIOCore
import Testing

@testable import Chirp

/// The life of one connection and the matching of its exchanges: pure state, one rule per row (Docs/Protocol.md
/// sections 5 to 7). The channel handler that carries out these actions is covered on EmbeddedChannel
/// (PeerChannelHandlerTests) and end to end (ConnectionSwitchTests, MessagingTests).
@Suite(.timeLimit(.minutes(5))) struct ConnectionStateTests {
    typealias Action = ConnectionLifecycle.Action

    @Test func aRetiredConnectionSaysGoodbyeAndClosesOnceThePeerRetiredItTooAndNothingIsInFlight() {
        var lifecycle = ConnectionLifecycle()
        #expect(
            lifecycle.retire(exchangesInFlight: true)
                == [.stopQueueing, .openReadGateForGood, .drain, .sendGoodbye("duplicate"), .scheduleForcedClose])
        #expect(lifecycle.state == .retired(peerRetired: false))  // no new messages or requests
        // The peer's goodbye arrives while one of our requests is still out: not yet.
        #expect(lifecycle.receivedGoodbye(reason: "duplicate", exchangesInFlight: true) == [.finishInbound])
        #expect(lifecycle.state == .retired(peerRetired: true))
        // Its reply arrives: now both sides are done with it.
        #expect(lifecycle.exchangeEnded(exchangesInFlight: false) == [.close])
        #expect(lifecycle.state == .closing)
    }

    @Test func aPeerThatRetiresFirstKeepsTheConnectionInUseUntilWeRetireItToo() {
        var lifecycle = ConnectionLifecycle()
        #expect(lifecycle.receivedGoodbye(reason: "duplicate", exchangesInFlight: false) == [.finishInbound])
        #expect(lifecycle.state == .open(peerRetired: true))  // our winner has not arrived yet: still ours to use
        #expect(lifecycle.exchangeEnded(exchangesInFlight: false).isEmpty)  // control: open connections do not close
        #expect(
            lifecycle.retire(exchangesInFlight: false)
                == [
                    .stopQueueing, .openReadGateForGood, .drain, .sendGoodbye("duplicate"), .scheduleForcedClose, .close
                ])
    }

    @Test(arguments: [
        // first event, then goodbye(stopping): the peer is leaving, whatever state the connection was in
        ConnectionLifecycle.State.open(peerRetired: false), .open(peerRetired: true), .retired(peerRetired: false)
    ])
    func aGoodbyeStoppingClosesAtOnce(from start: ConnectionLifecycle.State) {
        var lifecycle = ConnectionLifecycle()
        switch start {
        case .open(peerRetired: true): _ = lifecycle.receivedGoodbye(reason: "duplicate", exchangesInFlight: false)
        case .retired: _ = lifecycle.retire(exchangesInFlight: true)
        default: break
        }
        #expect(lifecycle.receivedGoodbye(reason: "stopping", exchangesInFlight: true) == [.close])
        #expect(lifecycle.peerIsStopping)
    }

    @Test func aRefusalAfterTheHellosStopsEverythingAndIsRemembered() {
        var lifecycle = ConnectionLifecycle()
        #expect(lifecycle.receivedRefusal(reason: "not on the list") == [.refuseAllFrames, .close])
        #expect(lifecycle.refusal == "not on the list")
        #expect(lifecycle.receivedRefusal(reason: "again").isEmpty)
    }

    @Test func theCloseFailsWhatIsInFlightOnceAndEndsTheInbound() {
        var lifecycle = ConnectionLifecycle()
        #expect(lifecycle.channelClosed() == [.refuseAllFrames, .finishInbound, .failExchanges])
        #expect(lifecycle.channelClosed().isEmpty)
        #expect(lifecycle.retire(exchangesInFlight: false).isEmpty)
        #expect(lifecycle.receivedGoodbye(reason: "stopping", exchangesInFlight: false).isEmpty)
    }

    @Test func aDuplicateGoodbyeSaidTwiceIsIgnored() {
        var lifecycle = ConnectionLifecycle()
        _ = lifecycle.receivedGoodbye(reason: "duplicate", exchangesInFlight: false)
        #expect(lifecycle.receivedGoodbye(reason: "duplicate", exchangesInFlight: false).isEmpty)
        #expect(!lifecycle.peerIsStopping)
    }

    // MARK: - Exchanges

    /// A deadline `seconds` after the start of the table's clock.
    private static func at(_ seconds: Int64) -> NIODeadline { .uptimeNanoseconds(UInt64(seconds) * 1_000_000_000) }

    @Test func eachWaiterIsResolvedExactlyOnceByItsAnswerItsDeadlineOrTheClose() {
        var exchanges = PendingExchanges<String>()
        #expect(exchanges.add(1, "first", deadline: Self.at(10)) == nil)
        #expect(exchanges.add(2, "second", deadline: Self.at(10)) == nil)
        #expect(exchanges.add(2, "same id", deadline: Self.at(10)) == "same id")  // refused: the id is in use
        #expect(exchanges.answered(1) == "first")
        #expect(exchanges.answered(1) == nil)  // a second answer, or one nobody asked for, is ignored
        #expect(exchanges.abandoned(1) == nil)
        #expect(exchanges.expired(at: Self.at(20)) == ["second"])
        #expect(exchanges.answered(2) == nil)  // the answer after the deadline: ignored
        #expect(exchanges.answered(99) == nil)
        #expect(exchanges.add(3, "third", deadline: Self.at(30)) == nil)
        #expect(exchanges.count == 1)
        #expect(exchanges.close().map(\.waiter) == ["third"])
        #expect(exchanges.isEmpty)
        #expect(exchanges.add(4, "late", deadline: Self.at(40)) == "late")  // closed: fails at once
        #expect(exchanges.expired(at: Self.at(100)).isEmpty)
    }

    @Test func theTableGivesTheEarliestDeadlineAndExpiresOnlyWhatReachedIt() {
        var exchanges = PendingExchanges<String>()
        #expect(exchanges.earliestDeadline == nil)  // nothing in flight: no timer
        _ = exchanges.add(1, "10 s", deadline: Self.at(10))
        _ = exchanges.add(2, "5 s", deadline: Self.at(5))
        _ = exchanges.add(3, "also 5 s", deadline: Self.at(5))
        _ = exchanges.add(4, "30 s", deadline: Self.at(30))
        #expect(exchanges.earliestDeadline == Self.at(5))
        #expect(exchanges.expired(at: Self.at(4)).isEmpty)  // a timer that fires early fails nothing
        #expect(exchanges.expired(at: Self.at(5)) == ["5 s", "also 5 s"])  // at the deadline itself, by id
        #expect(exchanges.earliestDeadline == Self.at(10))
        #expect(exchanges.answered(1) == "10 s")
        // The timer armed for the answered 10 s finds nothing then, and the next deadline is 30 s.
        #expect(exchanges.expired(at: Self.at(10)).isEmpty)
        #expect(exchanges.earliestDeadline == Self.at(30))
        #expect(exchanges.expired(at: Self.at(31)) == ["30 s"])
        #expect(exchanges.earliestDeadline == nil)
    }
}
