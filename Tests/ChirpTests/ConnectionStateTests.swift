import Testing

@testable import Chirp

/// The life of one connection and the matching of its exchanges: pure state, one rule per row (Docs/Protocol.md
/// sections 5 to 7). The channel handler that carries out these actions is covered on EmbeddedChannel
/// (PeerChannelHandlerTests) and end to end (ConnectionSwitchTests, MessagingTests).
@Suite struct ConnectionStateTests {
    typealias Action = ConnectionLifecycle.Action

    @Test func aRetiredConnectionSaysGoodbyeAndClosesOnceThePeerRetiredItTooAndNothingIsInFlight() {
        var lifecycle = ConnectionLifecycle()
        #expect(
            lifecycle.retire(exchangesInFlight: true)
                == [.stopQueueing, .openReadGateForGood, .drain, .sendGoodbye("duplicate"), .scheduleForcedClose])
        #expect(!lifecycle.acceptsMessages)
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
        #expect(lifecycle.acceptsMessages)  // our winner has not arrived yet: still ours to use
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

    @Test func eachWaiterIsResolvedExactlyOnceByItsAnswerItsTimeoutOrTheClose() {
        var exchanges = PendingExchanges<String>()
        #expect(exchanges.add(1, "first") == nil)
        #expect(exchanges.add(2, "second") == nil)
        #expect(exchanges.add(2, "same id") == "same id")  // refused: the id is in use
        #expect(exchanges.answered(1) == "first")
        #expect(exchanges.answered(1) == nil)  // a second answer, or one nobody asked for, is ignored
        #expect(exchanges.abandoned(1) == nil)  // its timer fires after the answer: nothing to do
        #expect(exchanges.answered(99) == nil)
        #expect(exchanges.count == 1)
        #expect(exchanges.close() == ["second"])
        #expect(exchanges.isEmpty)
        #expect(exchanges.add(3, "late") == "late")  // closed: fails at once
    }
}
