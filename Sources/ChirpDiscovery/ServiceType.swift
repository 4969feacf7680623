import ChirpSupport

/// A DNS-SD service type such as `chat`, advertised as `_chat._tcp`.
///
/// RFC 6763 section 7.2: 1-15 characters, only ASCII letters, digits and hyphens, at least one letter, no hyphen at the
/// start or end and no two hyphens in a row. A leading underscore and a `._tcp` suffix are accepted and stripped, so
/// `"_chat._tcp"` and `"chat"` name the same type.
///
/// ```swift
/// let type = try ServiceType("chat")
/// print(type.registrationType)   // _chat._tcp
/// ```
public struct ServiceType: Sendable, Hashable, CustomStringConvertible {
    /// The bare name, e.g. `chat`.
    public let name: String

    /// Validates `name`.
    /// - Throws: ``/ChirpSupport/ChirpError/Code/invalidServiceType`` with the rule that was broken.
    public init(_ name: String) throws {
        var bare = Substring(name)
        if bare.hasSuffix("._tcp.") {
            bare = bare.dropLast(6)
        } else if bare.hasSuffix("._tcp") {
            bare = bare.dropLast(5)
        }
        if bare.hasPrefix("_") { bare = bare.dropFirst() }
        let candidate = String(bare)
        if let reason = Self.problem(with: candidate) {
            throw ChirpError.invalidServiceType(name, reason: reason)
        }
        self.name = candidate
    }

    /// The registration type passed to DNS-SD, e.g. `_chat._tcp`.
    public var registrationType: String { "_\(name)._tcp" }

    public var description: String { name }

    /// Why `name` is not a valid service type, or `nil` if it is.
    package static func problem(with name: String) -> String? {
        let bytes = Array(name.utf8)
        if bytes.isEmpty { return "it is empty; use 1-15 letters, digits or hyphens" }
        if bytes.count > 15 { return "it has \(bytes.count) characters; RFC 6763 allows at most 15" }
        func isLetter(_ b: UInt8) -> Bool { (b >= 65 && b <= 90) || (b >= 97 && b <= 122) }
        func isDigit(_ b: UInt8) -> Bool { b >= 48 && b <= 57 }
        let hyphen = UInt8(ascii: "-")
        if let bad = bytes.first(where: { !isLetter($0) && !isDigit($0) && $0 != hyphen }) {
            let shown = bad < 128 ? "'\(Character(Unicode.Scalar(bad)))'" : "a non-ASCII character"
            return "it contains \(shown); only letters, digits and hyphens are allowed"
        }
        if !bytes.contains(where: isLetter) { return "it has no letter; at least one is required" }
        if bytes.first == hyphen || bytes.last == hyphen { return "it starts or ends with a hyphen" }
        if name.contains("--") { return "it contains two hyphens in a row" }
        return nil
    }
}
