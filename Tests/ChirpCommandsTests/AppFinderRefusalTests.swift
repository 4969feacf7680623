import Chirp
import Testing

@testable import ChirpCommands

/// Refusals (a shared secret missing or wrong, an accept policy) end the wait for apps early; fed events by hand.
@Suite(.timeLimit(.minutes(5))) struct AppFinderRefusalTests: FinderTimeline {
    let start = ContinuousClock.now
    static let idSuffix = "-0000000"

    static let secretRequired = "vault requires a shared secret: set CHIRP_SECRET or use --secret-file"
    static let mismatch = "shared secret does not match, or the peer does not use one (TLS handshake failed: x)"

    @Test func anAppThatRequiresASecretIsReportedWhenTheWindowCloses() {
        var finder = AppFinder(target: .only, startedAt: start)
        // The core reports the TXT record's verdict before the peer itself.
        finder.observe(.connectionRefused(peer: "vault", reason: Self.secretRequired), at: at(10))
        finder.observe(.peerAdded(app("vault")), at: at(10))
        #expect(finder.decision(at: at(20)) == .wait(until: at(40)))
        let refusal = Refusal(peer: "vault", reason: Self.secretRequired)
        #expect(finder.decision(at: at(40)) == .refused([refusal]))
        #expect(refusal.kind == .secretRequired)
        #expect(refusal.message(for: app("vault")).contains("this app (vault on host.local) requires a shared secret"))
    }

    @Test func aRefusedDialNamesTheAppByNameAndShortID() {
        var finder = AppFinder(target: .only, startedAt: start)
        let vault = app("vault")
        finder.observe(.peerAdded(vault), at: at(10))
        #expect(finder.decision(at: at(40)) == .wait(until: at(1040)))
        finder.observe(.connectionRefused(peer: vault.description, reason: Self.mismatch), at: at(300))
        #expect(finder.decision(at: at(300)) == .refused([Refusal(peer: vault.description, reason: Self.mismatch)]))
        #expect(Refusal(peer: vault.description, reason: Self.mismatch).kind == .secretMismatch)
    }

    @Test func aRefusalByAddressCountsOnceTheGraceSecondHasPassed() {
        var finder = AppFinder(target: .only, startedAt: start)
        finder.observe(.peerAdded(app("vault")), at: at(10))
        finder.observe(.connectionRefused(peer: "127.0.0.1:50000", reason: Self.mismatch), at: at(20))
        #expect(finder.decision(at: at(40)) == .wait(until: at(1040)))
        #expect(finder.decision(at: at(1040)) == .refused([Refusal(peer: "127.0.0.1:50000", reason: Self.mismatch)]))
    }

    @Test func aConnectedAppIsChosenEvenIfAnotherRefused() {
        var finder = AppFinder(target: .only, startedAt: start)
        finder.observe(.connectionRefused(peer: "vault", reason: Self.secretRequired), at: at(10))
        finder.observe(.peerAdded(app("vault")), at: at(10))
        finder.observe(.peerConnected(app("open")), at: at(15))
        #expect(finder.decision(at: at(40)) == .chosen(app("open")))
    }

    @Test func refusalsOfOtherCommandLineToolsDoNotCount() {
        var finder = AppFinder(target: .only, startedAt: start)
        let tool = cli("listrctl-7")
        finder.observe(.peerAdded(tool), at: at(5))
        finder.observe(.connectionRefused(peer: tool.description, reason: Self.mismatch), at: at(6))
        finder.observe(.peerAdded(app("vault")), at: at(10))
        #expect(finder.decision(at: at(2000)) == .wait(until: nil))
        #expect(finder.finalDecision() == nil)
    }

    @Test func aNamedAppThatRefusedEndsTheWaitAtOnce() {
        var finder = AppFinder(target: .named("vault"), startedAt: start)
        finder.observe(.peerAdded(app("vault")), at: at(10))
        #expect(finder.decision(at: at(20)) == .wait(until: nil))
        finder.observe(
            .connectionRefused(
                peer: app("vault").description,
                reason: "the peer refused the connection: listrctl-1 was not accepted by the accept policy"), at: at(30)
        )
        guard case .refused(let refusals) = finder.decision(at: at(30)) else {
            Issue.record("expected a refusal")
            return
        }
        #expect(refusals.map(\.kind) == [.notAccepted])
    }

    @Test func withAllRefusedAppsAreOutcomesAndOnlyRefusalsEndTheWait() {
        var finder = AppFinder(target: .every, startedAt: start)
        finder.observe(.connectionRefused(peer: "vault", reason: Self.secretRequired), at: at(10))
        finder.observe(.peerAdded(app("vault")), at: at(10))
        #expect(finder.decision(at: at(100)) == .wait(until: at(510)))
        #expect(finder.decision(at: at(510)) == .refused([Refusal(peer: "vault", reason: Self.secretRequired)]))

        var mixed = AppFinder(target: .every, startedAt: start)
        mixed.observe(.connectionRefused(peer: "vault", reason: Self.secretRequired), at: at(10))
        mixed.observe(.peerAdded(app("vault")), at: at(10))
        mixed.observe(.peerConnected(app("open")), at: at(12))
        #expect(mixed.decision(at: at(600)) == .collected)
        #expect(mixed.refusal(of: app("vault")) != nil)
    }

    @Test func reasonsSayWhatToDo() {
        let vault = app("vault")
        #expect(
            Refusal(peer: "vault", reason: "vault does not use a shared secret, and we do: not connecting").message(
                for: vault
            )
            .contains("does not use a shared secret, but one was given here"))
        #expect(
            Refusal(peer: "127.0.0.1:5", reason: Self.mismatch).message(for: nil)
                .hasPrefix("shared secret does not match the one of the peer at 127.0.0.1:5"))
        #expect(
            Refusal(peer: "x", reason: "something else").message(for: nil)
                == "the peer at x refused the connection: something else")
    }
}
