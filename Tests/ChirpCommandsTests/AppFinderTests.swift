import Chirp
import Testing
@testable import ChirpCommands

/// The discovery policy, fed events by hand.
@Suite struct AppFinderTests {
    let start = ContinuousClock.now

    func at(_ milliseconds: Int) -> ContinuousClock.Instant { start + .milliseconds(milliseconds) }
    func app(_ name: String) -> Peer { Peer(id: "id-\(name)", name: name, host: "host.local.") }
    func cli(_ name: String) -> Peer { Peer(id: "id-\(name)", name: name, metadata: ["chirp-role": "cli"]) }

    @Test func oneAppIsChosenOnceTheWindowCloses() {
        var finder = AppFinder(target: .only, startedAt: start)
        #expect(finder.decision(at: at(5)) == .wait(until: nil))
        finder.observe(.peerAdded(app("a")), at: at(10))
        finder.observe(.peerConnected(app("a")), at: at(12))
        // First seen after 10 ms: the window is the 30 ms minimum.
        #expect(finder.decision(at: at(20)) == .wait(until: at(40)))
        #expect(finder.decision(at: at(40)) == .chosen(app("a")))
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

    @Test func aNamedAppIsChosenAtOnceAndOthersIgnored() {
        var finder = AppFinder(target: .named("b"), startedAt: start)
        finder.observe(.peerConnected(app("a")), at: at(10))
        #expect(finder.decision(at: at(500)) == .wait(until: nil))
        finder.observe(.peerConnected(app("b")), at: at(11))
        #expect(finder.decision(at: at(11)) == .chosen(app("b")))
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
