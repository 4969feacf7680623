import ChirpTrust
import Crypto
import Foundation
import NIOSSL
import Testing
import X509

@testable import Chirp

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Device identities on disk: made on first use, loaded after, refused (never overwritten) when the files are not
/// safe or not right. Each test works in a temporary directory of its own, removed at its end.
@Suite(.timeLimit(.minutes(1))) struct DeviceIdentityTests {
    // MARK: - Made, then loaded

    @Test func isMadeOnFirstUseWithSafeModesAndLoadedTheSameAfter() throws {
        try withScratch { scratch in
            let directory = scratch + "/config/chirp/identity/alice"
            let made = try DeviceIdentity.loadOrCreate(name: "alice", directory: directory)
            #expect(made.name == "alice")
            #expect(made.directory == directory)
            #expect(mode(directory) == 0o700)
            #expect(mode(directory + "/key.pem") == 0o600)
            #expect(mode(directory + "/certificate.pem") == 0o644)
            #expect(try files(in: directory) == ["certificate.pem", "key.pem"])

            let loaded = try DeviceIdentity.loadOrCreate(name: "alice", directory: directory)
            #expect(loaded.fingerprint == made.fingerprint)
            #expect(loaded.certificateDER == made.certificateDER)
            #expect(loaded.privateKey == made.privateKey)

            // A second identity is another key, another serial number.
            let other = try DeviceIdentity.loadOrCreate(name: "alice", directory: scratch + "/other")
            #expect(other.fingerprint != made.fingerprint)
            let certificate = try Certificate(derEncoded: made.certificateDER)
            #expect(certificate.serialNumber != (try Certificate(derEncoded: other.certificateDER)).serialNumber)
        }
    }

    @Test func theCertificateIsSelfSignedForTheNameAndLongLived() throws {
        try withScratch { scratch in
            let identity = try DeviceIdentity.loadOrCreate(name: "Zoë's laptop", directory: scratch + "/zoe")
            let certificate = try Certificate(derEncoded: identity.certificateDER)
            #expect(certificate.subject == (try DistinguishedName { CommonName("Zoë's laptop") }))
            #expect(certificate.issuer == certificate.subject)
            #expect(certificate.publicKey.isValidSignature(certificate.signature, for: certificate))
            #expect(certificate.notValidBefore < Date())
            #expect(certificate.notValidAfter == DeviceIdentity.notValidAfter)
            #expect(certificate.serialNumber.bytes.count >= 16)
            #expect(try certificate.extensions.basicConstraints == .notCertificateAuthority)
            #expect(try certificate.extensions.extendedKeyUsage?.contains(.clientAuth) == true)
            #expect(try certificate.extensions.extendedKeyUsage?.contains(.serverAuth) == true)
        }
    }

    /// The fingerprint is what a TLS peer computes from the certificate it receives: NIOSSL's SubjectPublicKeyInfo
    /// of the DER certificate, SHA-256.
    @Test func theFingerprintIsWhatTLSSeesOfTheCertificate() throws {
        try withScratch { scratch in
            let alice = try DeviceIdentity.loadOrCreate(name: "alice", directory: scratch + "/alice")
            let bob = try DeviceIdentity.loadOrCreate(name: "bob", directory: scratch + "/bob")
            let seen = try NIOSSLCertificate(bytes: alice.certificateDER, format: .der)
            #expect(Fingerprint(spki: try seen.extractPublicKey().toSPKIBytes()) == alice.fingerprint)
            #expect(try Fingerprint(of: seen) == alice.fingerprint)
            // So is the PEM file's certificate, as another program would read it.
            let pem = try String(contentsOfFile: scratch + "/alice/certificate.pem", encoding: .utf8)
            let fromFile = try NIOSSLCertificate(bytes: Array(pem.utf8), format: .pem)
            #expect(try Fingerprint(of: fromFile) == alice.fingerprint)
            // The positive control: another identity's certificate gives another fingerprint.
            #expect(try Fingerprint(of: NIOSSLCertificate(bytes: bob.certificateDER, format: .der)) == bob.fingerprint)
            #expect(bob.fingerprint != alice.fingerprint)
        }
    }

    @Test func theDefaultDirectoryFollowsXDGConfigHomeThenHome() throws {
        #expect(
            try DeviceIdentity.defaultDirectory(
                name: "listr", environment: ["XDG_CONFIG_HOME": "/x/conf", "HOME": "/h"])
                == "/x/conf/chirp/identity/listr")
        #expect(
            try DeviceIdentity.defaultDirectory(name: "listr", environment: ["HOME": "/home/zoe"])
                == "/home/zoe/.config/chirp/identity/listr")
        // A relative XDG_CONFIG_HOME is ignored, as the XDG base directory specification says.
        #expect(
            try DeviceIdentity.defaultDirectory(name: "listr", environment: ["XDG_CONFIG_HOME": "conf", "HOME": "/h"])
                == "/h/.config/chirp/identity/listr")
        #expect(throws: DeviceIdentityError(.noConfigurationDirectory, path: "listr")) {
            try DeviceIdentity.defaultDirectory(name: "listr", environment: [:])
        }
    }

    @Test func aNameThatCannotNameADirectoryIsRefused() throws {
        try withScratch { scratch in
            for name in ["", ".", "..", "a/b", "bell\u{7}", "line\nbreak", String(repeating: "x", count: 65)] {
                let error = try identityError { try DeviceIdentity.loadOrCreate(name: name, directory: scratch + "/n") }
                guard case .invalidName = error.kind else {
                    Issue.record("\(name.debugDescription): \(error)")
                    continue
                }
                #expect(!error.description.contains("\n") && !error.description.contains("\u{7}"))
            }
            // The positive control: 64 characters and spaces are fine.
            _ = try DeviceIdentity.loadOrCreate(name: String(repeating: "x", count: 64), directory: scratch + "/long")
            _ = try DeviceIdentity.loadOrCreate(name: "kitchen display", directory: scratch + "/kitchen")
            #expect(try files(in: scratch) == ["kitchen", "long"])
        }
    }

    @Test func descriptionsShowTheNameAndFingerprintNeverTheKey() throws {
        try withScratch { scratch in
            let identity = try DeviceIdentity.loadOrCreate(name: "alice", directory: scratch + "/alice")
            let pem = try String(contentsOfFile: scratch + "/alice/key.pem", encoding: .utf8)
            let keyLine = try #require(pem.split(separator: "\n").dropFirst().first.map(String.init))
            for text in ["\(identity)", String(reflecting: identity), identity.description] {
                #expect(!text.contains(keyLine))
            }
            #expect(identity.description == "DeviceIdentity(alice, \(identity.fingerprint))")
        }
    }

    // MARK: - Refused, never overwritten

    @Test func aKeyOthersCanReadIsRefusedUntilChmod600() throws {
        try withScratch { scratch in
            let directory = scratch + "/alice"
            let made = try DeviceIdentity.loadOrCreate(name: "alice", directory: directory)
            let key = directory + "/key.pem"
            for loose: mode_t in [0o640, 0o604, 0o620, 0o660] {
                #expect(chmod(key, loose) == 0)
                let error = try identityError { try DeviceIdentity.loadOrCreate(name: "alice", directory: directory) }
                #expect(error.kind == .keyFileTooOpen(mode: UInt32(loose)))
                #expect(error.description.contains("run `chmod 600 \(key)`"))
                #expect(mode(key) == loose)
            }
            // The positive control: chmod 600, as the error says, and it loads.
            #expect(chmod(key, 0o600) == 0)
            #expect(
                try DeviceIdentity.loadOrCreate(name: "alice", directory: directory).fingerprint == made.fingerprint)
        }
    }

    @Test func aDirectoryOthersCanWriteIsRefusedUntilChmod700() throws {
        try withScratch { scratch in
            let directory = scratch + "/alice"
            let made = try DeviceIdentity.loadOrCreate(name: "alice", directory: directory)
            #expect(chmod(directory, 0o770) == 0)
            let error = try identityError { try DeviceIdentity.loadOrCreate(name: "alice", directory: directory) }
            #expect(error == DeviceIdentityError(.directoryTooOpen(mode: 0o770), path: directory))
            #expect(error.description.contains("run `chmod 700 \(directory)`"))
            // The positive control: a directory others may read but not write is fine.
            #expect(chmod(directory, 0o755) == 0)
            #expect(
                try DeviceIdentity.loadOrCreate(name: "alice", directory: directory).fingerprint == made.fingerprint)
        }
    }

    @Test func aDirectoryOfAnotherUserIsRefused() throws {
        try withScratch { scratch in
            let directory = scratch + "/alice"
            let made = try DeviceIdentity.loadOrCreate(name: "alice", directory: directory)
            let nobody: uid_t = 65534
            // Root can give the directory away; another user cannot, and tries a directory of root's instead.
            let foreign = geteuid() == 0 ? directory : "/"
            if geteuid() == 0 { #expect(chown(directory, nobody, gid_t(nobody)) == 0) }
            let error = try identityError { try DeviceIdentity.loadOrCreate(name: "alice", directory: foreign) }
            guard case .directoryNotOwned = error.kind else {
                Issue.record("not refused for its owner: \(error)")
                return
            }
            #expect(error.path == foreign)
            #expect(error.description.contains("chown"))
            #expect(try files(in: directory) == ["certificate.pem", "key.pem"])
            // The positive control: given back, it loads.
            if geteuid() == 0 { #expect(chown(directory, 0, 0) == 0) }
            #expect(
                try DeviceIdentity.loadOrCreate(name: "alice", directory: directory).fingerprint == made.fingerprint)
        }
    }

    @Test func aCertificateOfAnotherKeyIsRefusedAndLeftAsItIs() throws {
        try withScratch { scratch in
            let alice = try DeviceIdentity.loadOrCreate(name: "alice", directory: scratch + "/alice")
            _ = try DeviceIdentity.loadOrCreate(name: "bob", directory: scratch + "/bob")
            let aliceCertificate = try Data(contentsOf: URL(fileURLWithPath: scratch + "/alice/certificate.pem"))
            let bobCertificate = try Data(contentsOf: URL(fileURLWithPath: scratch + "/bob/certificate.pem"))
            let certificatePath = scratch + "/alice/certificate.pem"
            try bobCertificate.write(to: URL(fileURLWithPath: certificatePath))

            let error = try identityError {
                try DeviceIdentity.loadOrCreate(name: "alice", directory: scratch + "/alice")
            }
            #expect(error == DeviceIdentityError(.keyAndCertificateDoNotMatch, path: certificatePath))
            #expect(try Data(contentsOf: URL(fileURLWithPath: certificatePath)) == bobCertificate)
            // The positive control: alice's own certificate back, alice loads.
            try aliceCertificate.write(to: URL(fileURLWithPath: certificatePath))
            #expect(
                try DeviceIdentity.loadOrCreate(name: "alice", directory: scratch + "/alice").fingerprint
                    == alice.fingerprint)
        }
    }

    @Test func filesThatDoNotParseAreRefusedAndLeftAsTheyAre() throws {
        try withScratch { scratch in
            let directory = scratch + "/alice"
            let made = try DeviceIdentity.loadOrCreate(name: "alice", directory: directory)
            let keyPath = directory + "/key.pem"
            let certificatePath = directory + "/certificate.pem"
            let key = try Data(contentsOf: URL(fileURLWithPath: keyPath))
            let certificate = try Data(contentsOf: URL(fileURLWithPath: certificatePath))
            let garbage = Data("-----BEGIN PRIVATE KEY-----\nnot base64!\n-----END PRIVATE KEY-----\n".utf8)

            try garbage.write(to: URL(fileURLWithPath: keyPath))
            #expect(chmod(keyPath, 0o600) == 0)
            let keyError = try identityError { try DeviceIdentity.loadOrCreate(name: "alice", directory: directory) }
            guard case .keyUnparsable = keyError.kind else {
                Issue.record("a garbled key: \(keyError)")
                return
            }
            #expect(keyError.path == keyPath)
            #expect(try Data(contentsOf: URL(fileURLWithPath: keyPath)) == garbage)
            // An RSA or P-384 key is not this identity's kind of key either.
            try Data(P384.Signing.PrivateKey().pemRepresentation.utf8).write(to: URL(fileURLWithPath: keyPath))
            let p384Error = try identityError { try DeviceIdentity.loadOrCreate(name: "alice", directory: directory) }
            #expect(p384Error.path == keyPath)
            try key.write(to: URL(fileURLWithPath: keyPath))

            try Data("hello".utf8).write(to: URL(fileURLWithPath: certificatePath))
            let certificateError = try identityError {
                try DeviceIdentity.loadOrCreate(name: "alice", directory: directory)
            }
            guard case .certificateUnparsable = certificateError.kind else {
                Issue.record("a garbled certificate: \(certificateError)")
                return
            }
            #expect(certificateError.path == certificatePath)
            #expect(try Data(contentsOf: URL(fileURLWithPath: certificatePath)) == Data("hello".utf8))

            // A file far larger than an identity file is not read whole.
            try Data(repeating: 65, count: DeviceIdentity.maximumFileSize + 1).write(
                to: URL(fileURLWithPath: certificatePath))
            let largeError = try identityError { try DeviceIdentity.loadOrCreate(name: "alice", directory: directory) }
            guard case .fileTooLarge = largeError.kind else {
                Issue.record("a huge certificate file: \(largeError)")
                return
            }

            // The positive control: the original files back, the same identity.
            try certificate.write(to: URL(fileURLWithPath: certificatePath))
            #expect(
                try DeviceIdentity.loadOrCreate(name: "alice", directory: directory).fingerprint == made.fingerprint)
        }
    }

    @Test func aMissingCertificateIsMadeAgainFromTheKeyWithTheSameFingerprint() throws {
        try withScratch { scratch in
            let directory = scratch + "/alice"
            let made = try DeviceIdentity.loadOrCreate(name: "alice", directory: directory)
            #expect(unlink(directory + "/certificate.pem") == 0)
            let again = try DeviceIdentity.loadOrCreate(name: "alice", directory: directory)
            #expect(again.fingerprint == made.fingerprint)
            #expect(again.certificateDER != made.certificateDER)  // a new serial number
            #expect(try files(in: directory) == ["certificate.pem", "key.pem"])
        }
    }

    @Test func aCertificateWithoutItsKeyIsRefusedAndLeftAsItIs() throws {
        try withScratch { scratch in
            let directory = scratch + "/alice"
            _ = try DeviceIdentity.loadOrCreate(name: "alice", directory: directory)
            let key = try Data(contentsOf: URL(fileURLWithPath: directory + "/key.pem"))
            #expect(unlink(directory + "/key.pem") == 0)
            let error = try identityError { try DeviceIdentity.loadOrCreate(name: "alice", directory: directory) }
            #expect(error == DeviceIdentityError(.certificateWithoutKey, path: directory))
            #expect(try files(in: directory) == ["certificate.pem"])
            // The positive control: the key restored (mode 0600), it loads.
            try key.write(to: URL(fileURLWithPath: directory + "/key.pem"))
            #expect(chmod(directory + "/key.pem", 0o600) == 0)
            _ = try DeviceIdentity.loadOrCreate(name: "alice", directory: directory)
        }
    }

    // MARK: - Helpers

    /// Runs `body` with a new temporary directory, removed afterwards whatever happened.
    private func withScratch(_ body: (String) throws -> Void) throws {
        let scratch = NSTemporaryDirectory() + "chirp-identity-test-" + UUID().uuidString.prefix(8)
        #expect(mkdir(scratch, 0o700) == 0)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        try body(scratch)
    }

    /// The ``DeviceIdentityError`` behind the ``ChirpError`` that `body` throws.
    private func identityError(_ body: () throws -> DeviceIdentity) throws -> DeviceIdentityError {
        do {
            let identity = try body()
            Issue.record("no error: loaded \(identity)")
        } catch let error as ChirpError {
            #expect(error.code == .invalidConfiguration)
            let cause = try #require(error.cause as? DeviceIdentityError)
            #expect(error.message == "invalid configuration: \(cause.description)")
            return cause
        }
        throw DeviceIdentityTestError.noError
    }

    /// The permission bits of `path`.
    private func mode(_ path: String) -> mode_t {
        var info = stat()
        guard stat(path, &info) == 0 else { return 0 }
        return info.st_mode & 0o7777
    }

    /// The names in `directory`, sorted.
    private func files(in directory: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
    }
}

private enum DeviceIdentityTestError: Error { case noError }
