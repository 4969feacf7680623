import Foundation
import Testing

@testable import ChirpTrust

/// The trust decision's rules, one per test: events in, actions out.
@Suite(.timeLimit(.minutes(1))) struct TrustDecisionTests {
    static let laptop = Fingerprint(spki: Array("laptop".utf8))
    static let tablet = Fingerprint(spki: Array("tablet".utf8))
    static let impostor = Fingerprint(spki: Array("impostor".utf8))
    static let path = "/home/me/.config/chirp/trust/listr"

    static func store() throws -> TrustStore {
        try TrustStore(parsing: "\(laptop) laptop\n\(tablet) tablet perms=read\n")
    }

    static func trusted() throws -> TrustDecision {
        TrustDecision(mode: .trustedPeers(try store(), path: path))
    }

    @Test func openAcceptsEveryoneWithEveryPermission() {
        var decision = TrustDecision(mode: .open)
        #expect(decision.handle(.presented(Self.impostor, name: "x", direction: .inbound)) == [.accept(Permission.all)])
        #expect(decision.handle(.storeReloaded(TrustStore())) == [])
        #expect(decision.handle(.pinAccepted(Self.laptop, name: "laptop")) == [])
    }

    @Test func trustedPeersAcceptsListedDevicesWithTheirPermissions() throws {
        var decision = try Self.trusted()
        #expect(
            decision.handle(.presented(Self.laptop, name: "laptop", direction: .inbound)) == [
                .accept(Permission.defaults)
            ])
        #expect(
            decision.handle(.presented(Self.tablet, name: "any name", direction: .outbound(advertised: Self.tablet)))
                == [.accept([.read])])
    }

    @Test func trustedPeersRefusesOthersSayingWhatToRun() throws {
        var decision = try Self.trusted()
        let actions = decision.handle(.presented(Self.impostor, name: "laptop", direction: .inbound))
        guard case .refuse(let refusal) = actions.first, actions.count == 1 else {
            Issue.record("\(actions)")
            return
        }
        #expect(refusal.kind == .notTrusted)
        #expect(
            refusal.message.hasPrefix(
                "device \(Self.impostor.short) (\"laptop\") is not in the trust file \(Self.path)"))
        #expect(refusal.message.hasSuffix("run `chirp trust add \(Self.impostor) laptop`"))
    }

    @Test func aHostileNameIsEscapedAndQuotedInTheSuggestedCommand() throws {
        var decision = try Self.trusted()
        let actions = decision.handle(.presented(Self.impostor, name: "x'; rm -rf ~\n\u{1B}[2J", direction: .inbound))
        guard case .refuse(let refusal) = actions.first else {
            Issue.record("\(actions)")
            return
        }
        #expect(!refusal.message.contains("\n") && !refusal.message.contains("\u{1B}"))
        #expect(refusal.message.hasSuffix("add \(Self.impostor) 'x'\\''; rm -rf ~\\n\\u{1B}[2J'`"))
    }

    @Test func aNameThatLooksLikeAnOptionFollowsTwoDashes() throws {
        var decision = try Self.trusted()
        let actions = decision.handle(.presented(Self.impostor, name: "-rf", direction: .inbound))
        guard case .refuse(let refusal) = actions.first else {
            Issue.record("\(actions)")
            return
        }
        #expect(refusal.message.hasSuffix("add \(Self.impostor) -- -rf`"))
    }

    @Test func theDialerRefusesACertificateThatIsNotTheAdvertisedOne() throws {
        let modes: [TrustDecision.Mode] = [
            .open, .trustedPeers(try Self.store(), path: Self.path),
            .trustOnFirstUse(TrustPins(["laptop": Self.impostor]), path: Self.path)
        ]
        for mode in modes {
            var decision = TrustDecision(mode: mode)
            // The impostor advertises the laptop's fingerprint but holds only its own key.
            let actions = decision.handle(
                .presented(Self.impostor, name: "laptop", direction: .outbound(advertised: Self.laptop)))
            #expect(actions.count == 1)
            guard case .refuse(let refusal) = actions.first else {
                Issue.record("\(mode): \(actions)")
                continue
            }
            #expect(refusal.kind == .fingerprintMismatch(advertised: Self.laptop))
            #expect(
                refusal.message.contains(
                    "advertised the identity \(Self.laptop.short) but its certificate is \(Self.impostor.short)"))
        }
        #expect(TrustDecision.dialerCheck(presented: Self.laptop, advertised: Self.laptop, name: "laptop") == nil)
        #expect(TrustDecision.dialerCheck(presented: Self.laptop, advertised: nil, name: "laptop") == nil)
    }

    @Test func aReloadClosesTheConnectionsOfRemovedDevicesAndUpdatesPermissions() throws {
        var decision = try Self.trusted()
        var store = try Self.store()
        store.remove(Self.laptop)
        let text = store.text.replacingFirst("perms=read", with: "perms=read,write")
        let reloaded = try TrustStore(parsing: text)
        #expect(
            decision.handle(.storeReloaded(reloaded)) == [
                .closeConnections(of: [Self.laptop]), .permissionsChanged(Self.tablet, [.read, .write])
            ])
        #expect(decision.handle(.presented(Self.laptop, name: "laptop", direction: .inbound)).first?.isRefusal == true)
        #expect(decision.handle(.storeReloaded(reloaded)) == [])
    }

    @Test func aPinAcceptedInTrustedPeersModeIsWrittenToTheTrustFile() throws {
        var decision = try Self.trusted()
        let phone = Fingerprint(spki: Array("phone".utf8))
        let actions = decision.handle(.pinAccepted(phone, name: "phone", permissions: [.read]))
        var expected = try Self.store()
        try expected.add(TrustEntry(fingerprint: phone, label: "phone", permissions: [.read]))
        #expect(actions == [.writeTrustFile(expected)])
        #expect(decision.handle(.presented(phone, name: "phone", direction: .inbound)) == [.accept([.read])])
    }

    @Test func firstUsePinsAndAChangedIdentityIsRefusedEveryTime() {
        var decision = TrustDecision(mode: .trustOnFirstUse(TrustPins(), path: Self.path))
        #expect(
            decision.handle(.presented(Self.laptop, name: "laptop", direction: .inbound)) == [
                .pin(Self.laptop, name: "laptop"), .accept(Permission.defaults)
            ])
        #expect(
            decision.handle(.presented(Self.laptop, name: "laptop", direction: .inbound)) == [
                .accept(Permission.defaults)
            ])
        for _ in 0..<100 {
            let actions = decision.handle(.presented(Self.impostor, name: "laptop", direction: .inbound))
            guard case .refuse(let refusal) = actions.first, actions.count == 1 else {
                Issue.record("\(actions)")
                return
            }
            #expect(refusal.kind == .identityChanged(pinned: Self.laptop))
            #expect(refusal.message.hasPrefix("PEER IDENTITY HAS CHANGED: \"laptop\" was pinned as \(Self.laptop)"))
            #expect(refusal.message.contains("remove its pin from \(Self.path)"))
        }
        // Another name is another first use.
        #expect(
            decision.handle(.presented(Self.impostor, name: "other", direction: .inbound)) == [
                .pin(Self.impostor, name: "other"), .accept(Permission.defaults)
            ])
    }

    @Test func acceptingANewIdentityForAPinnedNameReplacesThePin() {
        var decision = TrustDecision(
            mode: .trustOnFirstUse(TrustPins(["laptop": Self.laptop]), path: Self.path, permissions: [.read]))
        #expect(
            decision.handle(.pinAccepted(Self.tablet, name: "laptop")) == [
                .closeConnections(of: [Self.laptop]), .pin(Self.tablet, name: "laptop")
            ])
        #expect(decision.handle(.presented(Self.tablet, name: "laptop", direction: .inbound)) == [.accept([.read])])
        #expect(decision.handle(.presented(Self.laptop, name: "laptop", direction: .inbound)).first?.isRefusal == true)
        #expect(decision.handle(.pinAccepted(Self.tablet, name: "laptop")) == [])
        #expect(decision.handle(.storeReloaded(TrustStore())) == [])
    }
}

extension TrustDecision.Action {
    var isRefusal: Bool {
        if case .refuse = self { return true }
        return false
    }
}

extension String {
    func replacingFirst(_ target: String, with replacement: String) -> String {
        guard let range = range(of: target) else { return self }
        return replacingCharacters(in: range, with: replacement)
    }
}
