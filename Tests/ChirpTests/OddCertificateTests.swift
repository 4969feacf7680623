import ChirpTestSupport
import ChirpTrust
import Crypto
import Foundation
import Testing
import X509

@testable import Chirp

/// Certificates an attacker (or an odd peer) may present to a transceiver with a device identity, through a peer
/// written from Docs/Protocol.md in Python (`scripts/testing/identity_peer.py`): what the app decides, and that it
/// serves its other peers all the while. Trust is in the key (its fingerprint), as in Syncthing: a certificate's
/// dates and issuer say nothing a fingerprint does not, and are not checked (Docs/Protocol.md, section 2).
extension LiveTests {
    @Suite struct OddCertificateTests {
        @Test func datesIssuersAndSizeUpToTheBoundDoNotMatterOnlyTheTrustedKey() async throws {
            try await withScratch { scratch in
                let type = uniqueServiceType()
                let app = try TestDevice("app", in: scratch)
                let friend = try TestDevice("friend", in: scratch)
                let expired = try OddCertificate.expired(in: scratch)
                let issuedByAnother = try OddCertificate.issuedByAnotherKey(in: scratch)
                let huge = try OddCertificate.huge(in: scratch)
                let oversized = try OddCertificate.huge(in: scratch, name: "oversized", kibibytes: 200)
                let untrusted = try OddCertificate.expired(in: scratch, name: "stranger")
                try app.trusts([friend])
                var store = try app.trustStore()
                for odd in [expired, issuedByAnother, huge, oversized] {
                    try store.add(TrustEntry(fingerprint: odd.fingerprint, label: odd.name))
                }
                try store.text.write(toFile: app.trustFile, atomically: false, encoding: .utf8)
                try friend.trusts([app])
                let appTransceiver = app.transceiver(type)
                let received = Collected<String>()
                try appTransceiver.receive(Marker.self) { marker, sender in received.append(sender.name) }
                try await appTransceiver.start()
                let port = try #require(appTransceiver.port)

                // An expired certificate, one another key signed, and a 64 KiB one, of trusted keys: accepted (the
                // key is trusted).
                for odd in [expired, issuedByAnother, huge] {
                    let peer = try await odd.dial(port: port, app: app, type: type)
                    #expect(try await peer.waitForExit() == 0, "\(odd.name): \(peer.lines) \(peer.standardError)")
                }
                // An expired certificate of a key nobody trusts: refused, told why.
                let stranger = try await untrusted.dial(port: port, app: app, type: type)
                #expect(try await stranger.waitForExit() == 2, "\(stranger.lines)")
                #expect(stranger.lines.contains { $0.contains("does not trust this device") }, "\(stranger.lines)")
                // A 200 KiB certificate, though its key is trusted: above BoringSSL's bound on the certificates of a
                // handshake (100 KiB), the TLS handshake fails and the connection closes; no more of it is held.
                let oversizedPeer = try await oversized.dial(port: port, app: app, type: type)
                #expect(
                    try await oversizedPeer.waitForExit() == 1, "\(oversizedPeer.lines) \(oversizedPeer.standardError)")
                #expect(!oversizedPeer.lines.contains("sent"), "\(oversizedPeer.lines)")

                // The app serves its other peers all the while.
                let friendTransceiver = friend.transceiver(type)
                try await friendTransceiver.start()
                let appPeer = try #require(try await friendTransceiver.waitForConnectedPeers(1).first)
                try await friendTransceiver.send(Marker(text: "still here"), to: appPeer)
                try await received.waitForCount(4)
                #expect(Set(received.values) == ["expired", "issued-by-another", "huge", "friend"])
                await friendTransceiver.shutdown()
                await appTransceiver.shutdown()
            }
        }
    }
}

/// A P-256 key and an unusual certificate for it, written as PEM files for the Python peer.
struct OddCertificate {
    let name: String
    let fingerprint: Fingerprint
    let certificatePath: String
    let keyPath: String

    static func expired(in directory: String, name: String = "expired") throws -> OddCertificate {
        let key = P256.Signing.PrivateKey()
        let now = Date()
        return try make(
            name: name, key: key, issuerKey: key, issuer: name, notBefore: now - 2 * 365 * 86_400,
            notAfter: now - 365 * 86_400, in: directory)
    }

    static func issuedByAnotherKey(in directory: String) throws -> OddCertificate {
        let key = P256.Signing.PrivateKey()
        return try make(
            name: "issued-by-another", key: key, issuerKey: P256.Signing.PrivateKey(), issuer: "Some Authority",
            in: directory)
    }

    static func huge(in directory: String, name: String = "huge", kibibytes: Int = 64) throws -> OddCertificate {
        let key = P256.Signing.PrivateKey()
        let padding = Certificate.Extension(
            oid: [1, 3, 6, 1, 4, 1, 99999, 1], critical: false,
            value: ArraySlice(repeating: 0x41, count: kibibytes * 1024))
        return try make(name: name, key: key, issuerKey: key, issuer: name, extra: [padding], in: directory)
    }

    private static func make(
        name: String, key: P256.Signing.PrivateKey, issuerKey: P256.Signing.PrivateKey, issuer: String,
        notBefore: Date = Date() - 3600, notAfter: Date = Date() + 86_400, extra: [Certificate.Extension] = [],
        in directory: String
    ) throws -> OddCertificate {
        var extensions = try Certificate.Extensions {
            Critical(BasicConstraints.notCertificateAuthority)
            try ExtendedKeyUsage([.serverAuth, .clientAuth])
        }
        for item in extra { try extensions.append(item) }
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: Certificate.PublicKey(key.publicKey),
            notValidBefore: notBefore, notValidAfter: notAfter,
            issuer: try DistinguishedName { CommonName(issuer) }, subject: try DistinguishedName { CommonName(name) },
            signatureAlgorithm: .ecdsaWithSHA256, extensions: extensions,
            issuerPrivateKey: Certificate.PrivateKey(issuerKey))
        let certificatePath = directory + "/\(name).crt.pem"
        let keyPath = directory + "/\(name).key.pem"
        try certificate.serializeAsPEM().pemString.write(toFile: certificatePath, atomically: true, encoding: .utf8)
        try key.pemRepresentation.write(toFile: keyPath, atomically: true, encoding: .utf8)
        return OddCertificate(
            name: name, fingerprint: Fingerprint(spki: key.publicKey.derRepresentation),
            certificatePath: certificatePath, keyPath: keyPath)
    }

    /// Runs the Python peer with this certificate against the app at `port`: it sends one `Marker`.
    func dial(port: Int, app: TestDevice, type: String) async throws -> TestProcess {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/testing/identity_peer.py").path
        return try await TestProcess(
            "/usr/bin/env",
            [
                "python3", script, "127.0.0.1", String(port), certificatePath, keyPath,
                app.identity.fingerprint.description, type, name, Marker.chirpTypeName, #"{"text":"odd"}"#
            ], input: .closed)
    }
}
