import ChirpTrust
import Testing

@testable import Chirp

/// Which advertised peers a transceiver dials, by how each side protects its connections (pure: the peer table's
/// rule, no network).
@Suite(.timeLimit(.minutes(1))) struct SecurityMismatchTests {
    typealias Table = PeerTable<Int, ContinuousClock.Instant>

    static func advert(secret: Bool = false, identity: Bool = false, fingerprint: Fingerprint? = nil) -> Table.Advert {
        var advert = PeerTableTests.advert("P", secret: secret)
        advert.usesIdentity = identity
        advert.fingerprint = fingerprint
        return advert
    }

    static func settings(secret: Bool = false, identity: Bool = false) -> Table.Settings {
        Table.Settings(localID: "M", protocolVersion: "1", usesSecret: secret, usesIdentity: identity)
    }

    let fingerprint = Fingerprint(spki: Array("peer".utf8))

    @Test func peersThatProtectTheirConnectionsAlikeAreDialed() {
        #expect(Table.securityMismatch(Self.advert(), Self.settings()) == nil)
        #expect(Table.securityMismatch(Self.advert(secret: true), Self.settings(secret: true)) == nil)
        #expect(
            Table.securityMismatch(
                Self.advert(identity: true, fingerprint: fingerprint), Self.settings(identity: true)) == nil)
    }

    @Test func everyOtherPairIsNotDialedAndSaysWhy() {
        let cases: [(Table.Advert, Table.Settings, String)] = [
            (Self.advert(identity: true, fingerprint: fingerprint), Self.settings(), "requires a device identity"),
            (
                Self.advert(identity: true, fingerprint: fingerprint), Self.settings(secret: true),
                "requires a device identity"
            ),
            (Self.advert(), Self.settings(identity: true), "uses no device identity, and we do"),
            (
                Self.advert(secret: true), Self.settings(identity: true),
                "requires a shared secret, and we use a device identity"
            ),
            (Self.advert(secret: true), Self.settings(), "requires a shared secret"),
            (Self.advert(), Self.settings(secret: true), "does not use a shared secret, and we do"),
            (
                Self.advert(identity: true, fingerprint: nil), Self.settings(identity: true),
                "without a valid fingerprint"
            )
        ]
        for (advert, settings, words) in cases {
            let reason = Table.securityMismatch(advert, settings)
            #expect(reason?.contains(words) == true, "\(String(describing: reason))")
        }
    }
}
