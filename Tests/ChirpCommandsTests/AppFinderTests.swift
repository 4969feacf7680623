import Chirp
import Testing

@testable import ChirpCommands

/// The discovery policy, fed events by hand.
@Suite(.timeLimit(.minutes(5))) struct AppFinderTests: FinderTimeline {
    let start = ContinuousClock.now
    static let idSuffix = ""

    @Test func oneAppIsChosenOnceTheWindowCloses() {
        var finder = AppFinder(target: .only, startedAt: start)
        #expect(finder.decision(at: at(5)) == .wait(until: nil))
        finder.observe(.peerAdded(app("a")), at: at(10))
        finder.observe(.peerConnected(app("a")), at: at(12))
        // First seen after 10 ms: the window is the 30 ms minimum.
        #expect(finder.decision(at: at(20)) == .wait(until: at(40)))
        #expect(finder.decision(at: at(40)) == .chosen(app("a")))
    }

    @Test func theOnlyAppIsChosenAsSoonAsItConnectsOnceTheDaemonsBurstIsOver() {
        var finder = AppFinder(target: .only, startedAt: start)
        finder.observe(.instanceFound(instanceName: "a [id-a]"), at: at(10))
        finder.observe(.peerAdded(app("a")), at: at(12))
        finder.observe(.peerConnected(app("a")), at: at(13))
        // The burst may still bring another instance until 5 ms after the last one.
        #expect(finder.decision(at: at(13)) == .wait(until: at(15)))
        #expect(finder.decision(at: at(15)) == .chosen(app("a")))
        // Well before the 30 ms settle window would have closed.
        #expect(finder.windowEnd == at(42))
    }

    @Test func everyInstanceOfTheBurstIsWaitedForBeforeDeciding() {
        var finder = AppFinder(target: .only, startedAt: start)
        finder.observe(.instanceFound(instanceName: "a [id-a]"), at: at(10))
        finder.observe(.instanceFound(instanceName: "b [id-b]"), at: at(11))
        finder.observe(.peerAdded(app("a")), at: at(14))
        finder.observe(.peerConnected(app("a")), at: at(16))
        #expect(finder.decision(at: at(16)) == .wait(until: at(44)))
        finder.observe(.peerAdded(app("b")), at: at(17))
        #expect(finder.decision(at: at(17)) == .wait(until: at(44)))
        finder.observe(.peerConnected(app("b")), at: at(19))
        #expect(finder.decision(at: at(19)) == .several([app("a"), app("b")]))
    }

    @Test func anInstanceThatNeverResolvesFallsBackToTheSettleWindow() {
        var finder = AppFinder(target: .only, startedAt: start)
        finder.observe(.instanceFound(instanceName: "a [id-a]"), at: at(10))
        finder.observe(.instanceFound(instanceName: "not a chirp peer"), at: at(10))
        finder.observe(.peerConnected(app("a")), at: at(14))
        #expect(finder.decision(at: at(20)) == .wait(until: at(44)))
        #expect(finder.decision(at: at(44)) == .chosen(app("a")))
    }

    @Test func aToolInTheBurstCountsAsResolvedButNotAsAnApp() {
        var finder = AppFinder(target: .only, startedAt: start)
        finder.observe(.instanceFound(instanceName: "listrctl-1 [id-list]"), at: at(10))
        finder.observe(.instanceFound(instanceName: "a [id-a]"), at: at(10))
        finder.observe(.peerAdded(cli("listrctl-1")), at: at(12))
        finder.observe(.peerConnected(app("a")), at: at(16))
        #expect(finder.decision(at: at(16)) == .chosen(app("a")))
    }

    @Test func aFixedWindowIsAlwaysWaitedOut() {
        var finder = AppFinder(target: .only, startedAt: start, fixedWindow: .milliseconds(200))
        finder.observe(.instanceFound(instanceName: "a [id-a]"), at: at(10))
        finder.observe(.peerConnected(app("a")), at: at(16))
        #expect(finder.decision(at: at(16)) == .wait(until: at(216)))
        #expect(finder.decision(at: at(216)) == .chosen(app("a")))
    }

    @Test func twoAppsWithinTheWindowAreReportedSorted() {
        var finder = AppFinder(target: .only, startedAt: start)
        finder.observe(.peerConnected(app("zed")), at: at(10))
        finder.observe(.peerConnected(app("amy")), at: at(25))
        #expect(finder.decision(at: at(40)) == .several([app("amy"), app("zed")]))
    }

    @Test func theWindowWidensWhenDiscoveryIsSlow() {
        var finder = AppFinder(target: .only, startedAt: start)
        finder.observe(.peerConnected(app("a")), at: at(100))
        #expect(finder.window == .milliseconds(100))
        #expect(finder.decision(at: at(150)) == .wait(until: at(200)))
        var slow = AppFinder(target: .only, startedAt: start)
        slow.observe(.peerConnected(app("a")), at: at(3000))
        #expect(slow.window == .seconds(1))
        let fixed = AppFinder(target: .only, startedAt: start, fixedWindow: .milliseconds(400))
        #expect(fixed.window == .milliseconds(400))
    }

    @Test func commandLineToolsAreNotApps() {
        var finder = AppFinder(target: .only, startedAt: start)
        finder.observe(.peerConnected(cli("listrctl-1")), at: at(5))
        finder.observe(.peerConnected(app("a")), at: at(10))
        #expect(finder.decision(at: at(100)) == .chosen(app("a")))
    }

    @Test func aDiscoveredAppIsWaitedForBrieflyBeforeChoosing() {
        var finder = AppFinder(target: .only, startedAt: start)
        finder.observe(.peerConnected(app("a")), at: at(10))
        finder.observe(.peerAdded(app("b")), at: at(15))
        let graceEnd = at(40) + AppFinder.connectGrace
        #expect(finder.decision(at: at(40)) == .wait(until: graceEnd))
        finder.observe(.peerConnected(app("b")), at: at(60))
        #expect(finder.decision(at: at(60)) == .several([app("a"), app("b")]))
        // One that never connects (a stale record) stops counting after the grace.
        var stale = AppFinder(target: .only, startedAt: start)
        stale.observe(.peerConnected(app("a")), at: at(10))
        stale.observe(.peerAdded(app("ghost")), at: at(15))
        #expect(stale.decision(at: graceEnd) == .chosen(app("a")))
    }

    @Test func aNamedAppIsChosenOnceNoOtherOfItsNameCanBeComingAndOthersIgnored() {
        var finder = AppFinder(target: .named("b"), startedAt: start)
        finder.observe(.instanceFound(instanceName: "a [id-a]"), at: at(5))
        finder.observe(.instanceFound(instanceName: "b [id-b]"), at: at(5))
        finder.observe(.peerConnected(app("a")), at: at(10))
        // An app of another name does not open the window.
        #expect(finder.decision(at: at(500)) == .wait(until: nil))
        finder.observe(.peerConnected(app("b")), at: at(511))
        // The daemon's burst is long over and every instance it reported is a peer: b at once.
        #expect(finder.decision(at: at(511)) == .chosen(app("b")))
    }

    @Test func aNamedAppWithoutTheDaemonsBurstIsChosenWhenTheWindowCloses() {
        var finder = AppFinder(target: .named("b"), startedAt: start)
        finder.observe(.peerConnected(app("b")), at: at(11))
        #expect(finder.decision(at: at(11)) == .wait(until: at(41)))
        #expect(finder.decision(at: at(41)) == .chosen(app("b")))
    }

    @Test func twoAppsOfTheNameAskedForAreSeveralNotAPick() {
        let kitchenA = Peer(id: "A1B2C3D4-0000", name: "kitchen", host: "host.local.")
        let kitchenB = Peer(id: "E5F6A7B8-0000", name: "kitchen", host: "host.local.")
        var finder = AppFinder(target: .named("kitchen"), startedAt: start)
        finder.observe(.instanceFound(instanceName: "kitchen [A1B2C3D4-0000]"), at: at(10))
        finder.observe(.instanceFound(instanceName: "kitchen [E5F6A7B8-0000]"), at: at(10))
        finder.observe(.peerConnected(kitchenB), at: at(14))
        #expect(finder.decision(at: at(14)) == .wait(until: at(15)))  // the end of the daemon's burst
        finder.observe(.peerConnected(kitchenA), at: at(15))
        #expect(finder.decision(at: at(15)) == .several([kitchenA, kitchenB]))
        #expect(finder.finalDecision() == .several([kitchenA, kitchenB]))
        #expect(kitchenA.identifiedLabel == "kitchen (A1B2C3D4) on host.local")
    }

    @Test func anIdOrTheStartOfOneDesignatesOneApp() {
        let kitchenA = Peer(id: "A1B2C3D4-0000", name: "kitchen", host: "host.local.")
        let kitchenB = Peer(id: "E5F6A7B8-0000", name: "kitchen", host: "host.local.")
        // The start of an id, 4 characters or more, in any case.
        var byPrefix = AppFinder(target: .named("e5f6"), startedAt: start)
        byPrefix.observe(.instanceFound(instanceName: "kitchen [A1B2C3D4-0000]"), at: at(10))
        byPrefix.observe(.instanceFound(instanceName: "kitchen [E5F6A7B8-0000]"), at: at(10))
        byPrefix.observe(.peerConnected(kitchenA), at: at(14))
        byPrefix.observe(.peerConnected(kitchenB), at: at(15))
        #expect(byPrefix.decision(at: at(15)) == .chosen(kitchenB))
        // Fewer than 4 characters are a name, not an id.
        var short = AppFinder(target: .named("E5F"), startedAt: start)
        short.observe(.peerConnected(kitchenB), at: at(15))
        #expect(short.decision(at: at(2000)) == .wait(until: nil))
        // A full id: at once, nothing else can be coming.
        var full = AppFinder(target: .named("A1B2C3D4-0000"), startedAt: start)
        full.observe(.peerConnected(kitchenA), at: at(14))
        #expect(full.decision(at: at(14)) == .chosen(kitchenA))
    }

    @Test func allWaitsForQuietDiscoveryAndEveryReply() {
        var finder = AppFinder(target: .every, startedAt: start)
        #expect(finder.observe(.peerConnected(app("a")), at: at(10)) == [app("a")])
        #expect(finder.observe(.peerConnected(app("b")), at: at(200)) == [app("b")])
        #expect(finder.observe(.peerConnected(app("b")), at: at(201)) == [])
        // Quiet for 0.5 s after the last app, and replies outstanding: keep waiting.
        #expect(finder.decision(at: at(300), pendingReplies: 0) == .wait(until: at(700)))
        #expect(finder.decision(at: at(700), pendingReplies: 1) == .wait(until: nil))
        #expect(finder.decision(at: at(700), pendingReplies: 0) == .collected)
        // An app that disconnected after it got the command still counts.
        finder.observe(.peerDisconnected(app("a")), at: at(710))
        #expect(finder.connected.count == 2)
    }

    @Test func finalDecisionUsesWhatIsConnected() {
        var finder = AppFinder(target: .only, startedAt: start)
        #expect(finder.finalDecision() == nil)
        finder.observe(.peerConnected(app("a")), at: at(10))
        #expect(finder.finalDecision() == .chosen(app("a")))
        finder.observe(.peerDisconnected(app("a")), at: at(20))
        #expect(finder.finalDecision() == nil)
    }
}
