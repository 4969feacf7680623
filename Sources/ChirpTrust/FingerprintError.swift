import ChirpSupport

/// Why a text is not a ``Fingerprint``: ``kind`` to match on, ``description`` a sentence to show as it is, which says
/// what to do (compare the fingerprint again with the one the device shows).
public struct FingerprintError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong.
    public enum Kind: Sendable, Equatable {
        /// No characters at all (only the prefix, dashes or spaces, or nothing).
        case empty
        /// A character base32 does not have, at this position (1-based, counting the fingerprint's characters only:
        /// not the prefix, dashes or spaces).
        case invalidCharacter(Character, position: Int)
        /// This many characters instead of 53.
        case wrongLength(Int)
        /// The check character does not match the others: one of them is mistyped, or two are swapped.
        case checkFailed
    }

    /// What is wrong.
    public let kind: Kind

    /// Makes the error of `kind`.
    public init(_ kind: Kind) { self.kind = kind }

    /// The sentence to show: "not a fingerprint: " and the ``reason``.
    public var description: String { "not a fingerprint: \(reason)" }

    /// What is wrong and what to do, without saying that the text is not a fingerprint.
    public var reason: String {
        let shape = "a fingerprint is `chirp:` and 53 characters (13 groups of 4 and a check character)"
        switch kind {
        case .empty:
            return "it is empty; \(shape), as `chirp id` shows it"
        case .invalidCharacter(let character, let position):
            let shown = UntrustedText.escaped(String(character))
            let hint = Self.lookAlikes[character].map { " (did you mean '\($0)'?)" } ?? ""
            return
                "character \(position) is '\(shown)'\(hint), which a fingerprint does not have: only letters a-z and digits 2-7"
        case .wrongLength(let count):
            let missing =
                count < Fingerprint.characterCount
                ? "\(Fingerprint.characterCount - count) missing" : "\(count - Fingerprint.characterCount) too many"
            return
                "it has \(count) characters, \(missing); \(shape): copy it again from the device"
        case .checkFailed:
            return
                "its check character does not match, so a character is mistyped (or two are swapped); compare it again with the one the device shows"
        }
    }

    /// Digits people type for the letter they look like (base32 has no 0, 1, 8 or 9).
    private static let lookAlikes: [Character: Character] = ["0": "o", "1": "l", "8": "b", "9": "g"]
}
