import ChirpSupport
import Crypto
import Foundation

/// A secret shared by the peers of a service: peers that hold the same secret authenticate each other and encrypt
/// everything they exchange (TLS 1.2 with a pre-shared key); peers without it cannot connect.
///
/// The secret itself never travels and never appears in logs, errors or descriptions. The TLS key is derived from it
/// with HKDF-SHA256, bound to the service type, so one secret used for two services gives two unrelated keys.
///
/// ```swift
/// var configuration = Configuration(serviceType: "listrctl")
/// configuration.security = .sharedSecret(try SharedSecret.fromEnvironment() ?? SharedSecret("correct horse battery staple"))
/// ```
public struct SharedSecret: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The shortest secret accepted, in bytes.
    public static let minimumLength = 8
    /// The environment variable read by ``fromEnvironment(_:)``.
    public static let environmentVariable = "CHIRP_SECRET"

    private let bytes: [UInt8]

    /// A secret from text (surrounding whitespace and newlines are ignored).
    /// - Throws: ``/ChirpSupport/ChirpError/Code/invalidConfiguration`` when it is shorter than ``minimumLength``
    ///   bytes.
    public init(_ text: String) throws {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard trimmed.utf8.count >= Self.minimumLength else {
            throw ChirpError.invalidConfiguration(
                "the shared secret is too short: use at least \(Self.minimumLength) characters (a long random string is best)"
            )
        }
        bytes = Array(trimmed.utf8)
    }

    /// The secret stored in a file (its whole content, without surrounding whitespace).
    /// - Throws: ``/ChirpSupport/ChirpError/Code/invalidConfiguration`` when the file cannot be read or the secret is
    ///   too short.
    public init(contentsOfFile path: String) throws {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw ChirpError.invalidConfiguration(
                "cannot read the secret file \(path): \((error as NSError).localizedDescription)", cause: error)
        }
        guard data.count <= 4096 else {
            throw ChirpError.invalidConfiguration(
                "the secret file \(path) is larger than 4 KiB; it should hold one secret")
        }
        try self.init(String(decoding: data, as: UTF8.self))
    }

    /// The secret in `CHIRP_SECRET` (or `variable`), or `nil` when it is not set.
    public static func fromEnvironment(_ variable: String = environmentVariable) throws -> SharedSecret? {
        guard let value = ProcessInfo.processInfo.environment[variable], !value.isEmpty else { return nil }
        return try SharedSecret(value)
    }

    /// Never the secret.
    public var description: String { "SharedSecret(redacted)" }
    public var debugDescription: String { description }

    /// The 32-byte TLS pre-shared key for `serviceType`: HKDF-SHA256 over the secret, with a fixed salt and the
    /// service type in the info, so keys differ per service.
    func preSharedKey(serviceType: String) -> [UInt8] {
        let key = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: bytes),
            salt: Array("chirp-psk-v1".utf8),
            info: Array("service:\(serviceType)".utf8),
            outputByteCount: 32)
        return key.withUnsafeBytes { Array($0) }
    }
}
