import ChirpSupport
import ChirpTrust
import Crypto
import Foundation
import NIOSSL
import X509

/// A device's identity: a P-256 signing key and a self-signed X.509 certificate for it, kept in a directory of their
/// own. Its ``fingerprint`` (the SHA-256 of the certificate's public key) is what other devices trust, compare and
/// pin: a name or an address can be forged, a fingerprint cannot without the key.
///
/// ```swift
/// let identity = try DeviceIdentity.loadOrCreate(name: "listr")
/// print(identity.fingerprint)  // chirp:xxxx-xxxx-…-x, as `chirp id` shows it
/// ```
///
/// The directory (by default ``defaultDirectory(name:)``: `$XDG_CONFIG_HOME/chirp/identity/NAME/`, or
/// `~/.config/chirp/identity/NAME/`) is made with mode 0700 and holds:
///
/// - `key.pem`: the private key (PKCS #8, PEM), mode 0600. Whoever holds it is this device.
/// - `certificate.pem`: the certificate (PEM): subject CN = the name, a random 20-byte serial number, valid until
///   9999-12-31 (RFC 5280's "no well-defined expiration date": a device keeps its identity until its key is
///   replaced), signed by its own key.
///
/// The fingerprint depends on the key only: a certificate that is missing is made again from the key, with the same
/// fingerprint. Loading refuses, with a sentence that names the path and what to run, a directory or a key file of
/// another user, a directory other users may write to, a key file other users may read, files that do not parse and
/// a certificate that is not the key's. It never overwrites a file.
public struct DeviceIdentity: Sendable, CustomStringConvertible {
    /// The name, as in the certificate's subject (CN) and the default directory.
    public let name: String
    /// The directory that holds the key and the certificate.
    public let directory: String
    /// The SHA-256 of the certificate's public key (its SubjectPublicKeyInfo, DER): what TLS peers see.
    public let fingerprint: Fingerprint
    /// The certificate, DER.
    let certificateDER: [UInt8]
    /// The certificate, for TLS.
    let certificate: NIOSSLCertificate
    /// The private key, for TLS.
    let privateKey: NIOSSLPrivateKey

    /// The file that holds the private key.
    static let keyFileName = "key.pem"
    /// The file that holds the certificate.
    static let certificateFileName = "certificate.pem"
    /// The largest identity file read, in bytes (one is a few hundred).
    static let maximumFileSize = 64 * 1024
    /// The longest name, in characters: X.509's upper bound for a common name (RFC 5280, `ub-common-name`).
    static let maximumNameLength = 64
    /// The end of every certificate's validity: 9999-12-31T23:59:59Z (RFC 5280, 4.1.2.5).
    static let notValidAfter = Date(timeIntervalSince1970: 253_402_300_799)

    /// The identity named `name` in `directory` (by default ``defaultDirectory(name:)``): made on first use (the
    /// directory with mode 0700, a new key with mode 0600, its certificate), loaded after.
    ///
    /// - Throws: ``/ChirpSupport/ChirpError/Code/invalidConfiguration`` with a sentence that names the path at fault and
    ///   what to do: a name that cannot name a directory (empty, `/`, control characters, longer than 64
    ///   characters); a directory or key file that belongs to another user; a directory other users may write to
    ///   (`chmod 700`); a key file other users may read or write (`chmod 600`); a key or a certificate that does not
    ///   parse; a certificate that is not the key's; a certificate without its key. No file is overwritten.
    public static func loadOrCreate(name: String, directory: String? = nil) throws -> DeviceIdentity {
        do throws(DeviceIdentityError) {
            let path: String
            if let directory {
                path = directory
            } else {
                path = try defaultDirectory(name: name, environment: ProcessInfo.processInfo.environment)
            }
            return try load(name: name, directory: path)
        } catch {
            throw ChirpError.invalidConfiguration(error.description, cause: error)
        }
    }

    /// Where the identity named `name` is kept by default: `$XDG_CONFIG_HOME/chirp/identity/NAME` when
    /// `XDG_CONFIG_HOME` is set to an absolute path, else `$HOME/.config/chirp/identity/NAME`.
    ///
    /// - Throws: ``/ChirpSupport/ChirpError/Code/invalidConfiguration`` when the name cannot name a directory, or
    ///   neither variable is set.
    public static func defaultDirectory(name: String) throws -> String {
        do throws(DeviceIdentityError) {
            return try defaultDirectory(name: name, environment: ProcessInfo.processInfo.environment)
        } catch {
            throw ChirpError.invalidConfiguration(error.description, cause: error)
        }
    }

    /// The name and the fingerprint; never the key.
    public var description: String { "DeviceIdentity(\(UntrustedText.escaped(name)), \(fingerprint))" }

    // MARK: - Load or create

    /// ``defaultDirectory(name:)`` in `environment`.
    static func defaultDirectory(name: String, environment: [String: String]) throws(DeviceIdentityError) -> String {
        try checkName(name)
        if let configuration = environment["XDG_CONFIG_HOME"], configuration.hasPrefix("/") {
            return join(configuration, "chirp", "identity", name)
        }
        if let home = environment["HOME"], !home.isEmpty {
            return join(home, ".config", "chirp", "identity", name)
        }
        throw DeviceIdentityError(.noConfigurationDirectory, path: name)
    }

    /// The identity in `directory`, made there first when the directory holds neither file.
    static func load(name: String, directory: String) throws(DeviceIdentityError) -> DeviceIdentity {
        try checkName(name)
        try IdentityFiles.prepareDirectory(directory)
        let keyPath = join(directory, keyFileName)
        let certificatePath = join(directory, certificateFileName)
        let hasCertificate = try IdentityFiles.status(certificatePath) != nil
        if try IdentityFiles.status(keyPath) == nil {
            if hasCertificate { throw DeviceIdentityError(.certificateWithoutKey, path: directory) }
            // When another process made its key first, this one is dropped and that one is read below.
            _ = try IdentityFiles.createNew(keyPath, content: P256.Signing.PrivateKey().pemRepresentation, mode: 0o600)
        }
        let key = try readKey(keyPath)
        if !hasCertificate {
            let pem: String
            do {
                pem = try makeCertificate(name: name, key: key).serializeAsPEM().pemString
            } catch {
                throw DeviceIdentityError(.cannotCreate("\(error)"), path: certificatePath)
            }
            _ = try IdentityFiles.createNew(certificatePath, content: pem + "\n", mode: 0o644)
        }
        let certificate = try readCertificate(certificatePath)
        guard certificate.publicKey == Certificate.PublicKey(key.publicKey) else {
            throw DeviceIdentityError(.keyAndCertificateDoNotMatch, path: certificatePath)
        }
        let der: [UInt8]
        let tlsCertificate: NIOSSLCertificate
        let tlsKey: NIOSSLPrivateKey
        do {
            der = try certificate.serializeAsPEM().derBytes
            tlsCertificate = try NIOSSLCertificate(bytes: der, format: .der)
            tlsKey = try NIOSSLPrivateKey(bytes: Array(key.pemRepresentation.utf8), format: .pem)
        } catch {
            throw DeviceIdentityError(.unusableForTLS("\(error)"), path: directory)
        }
        return DeviceIdentity(
            name: name, directory: directory, fingerprint: Fingerprint(spki: key.publicKey.derRepresentation),
            certificateDER: der, certificate: tlsCertificate, privateKey: tlsKey)
    }

    /// The key in the file at `path`, after checking who may read it.
    private static func readKey(_ path: String) throws(DeviceIdentityError) -> P256.Signing.PrivateKey {
        try IdentityFiles.checkKeyFile(path)
        let text = try IdentityFiles.contents(of: path, limit: maximumFileSize)
        do {
            return try P256.Signing.PrivateKey(pemRepresentation: text)
        } catch {
            throw DeviceIdentityError(.keyUnparsable(String(describing: error)), path: path)
        }
    }

    /// The certificate in the file at `path`.
    private static func readCertificate(_ path: String) throws(DeviceIdentityError) -> Certificate {
        let text = try IdentityFiles.contents(of: path, limit: maximumFileSize)
        do {
            return try Certificate(pemEncoded: text)
        } catch {
            throw DeviceIdentityError(.certificateUnparsable(String(describing: error)), path: path)
        }
    }

    /// A self-signed certificate for `key`: subject and issuer CN = `name`, a random serial number, valid from an hour
    /// ago (clocks differ) until ``notValidAfter``; usable for TLS servers and clients, not a certificate authority.
    static func makeCertificate(name: String, key: P256.Signing.PrivateKey, now: Date = Date()) throws -> Certificate {
        let subject = try DistinguishedName { CommonName(name) }
        let extensions = try Certificate.Extensions {
            Critical(BasicConstraints.notCertificateAuthority)
            Critical(KeyUsage(digitalSignature: true))
            try ExtendedKeyUsage([.serverAuth, .clientAuth])
        }
        return try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(key.publicKey),
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: notValidAfter,
            issuer: subject, subject: subject, signatureAlgorithm: .ecdsaWithSHA256, extensions: extensions,
            issuerPrivateKey: Certificate.PrivateKey(key))
    }

    /// Refuses a name that cannot be one directory's name or a certificate's common name.
    static func checkName(_ name: String) throws(DeviceIdentityError) {
        let reason: String?
        if name.isEmpty {
            reason = "it is empty"
        } else if name == "." || name == ".." {
            reason = "it names a directory already there"
        } else if name.contains("/") {
            reason = "it has a '/'"
        } else if name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            reason = "it has a control character"
        } else if name.count > maximumNameLength {
            reason = "it is longer than \(maximumNameLength) characters"
        } else {
            reason = nil
        }
        if let reason { throw DeviceIdentityError(.invalidName(reason), path: name) }
    }

    /// `parts` joined with single slashes.
    private static func join(_ parts: String...) -> String {
        var path = ""
        for part in parts {
            if path.isEmpty {
                path = part
            } else {
                path += (path.hasSuffix("/") ? "" : "/") + part
            }
        }
        return path
    }
}
