import Crypto

/// A device's identity: the SHA-256 of its certificate's public key (the DER bytes of the SubjectPublicKeyInfo), as
/// Syncthing's device IDs and libp2p's peer IDs are. A name or an address can be forged; a fingerprint cannot without
/// the private key.
///
/// People see it in a readable form they can compare and type (``description``):
///
/// ```
/// chirp:4oym-iquy-7qob-jgx3-6tej-s35z-eqt2-4qpe-msnz-gtfe-swmr-w6cs-xbkq-l
/// ```
///
/// (an empty key's, for the shape) is made of:
///
/// - the prefix `chirp:`;
/// - the 32 bytes in base32 (RFC 4648's alphabet `a`-`z`, `2`-`7`, lowercase, no padding): 52 characters, the bits
///   taken most significant first, the last character carrying the final 4 bits and a 0 bit;
/// - one check character: Luhn mod 32 over those 52 characters (the Luhn mod N algorithm with N = 32 and the base32
///   alphabet's order), which catches any single mistyped character and most swaps of two neighbours;
/// - dashes after every 4 characters: 13 groups of 4, then the check character alone.
///
/// ``init(parsing:)`` reads it back ignoring case, the prefix, dashes and spaces, and says what is wrong with a typo.
/// ``short`` is the first 8 characters, for columns and log lines; it identifies nobody on its own (40 bits).
public struct Fingerprint: Hashable, Sendable, Comparable, CustomStringConvertible, Codable {
    /// The number of bytes of a fingerprint (a SHA-256 digest).
    public static let byteCount = 32
    /// What the readable form starts with.
    public static let prefix = "chirp:"
    /// The number of base32 characters the 32 bytes take.
    static let dataCharacterCount = 52
    /// The characters of the readable form after the prefix, dashes aside: the data and the check character.
    public static let characterCount = dataCharacterCount + 1
    /// RFC 4648's base32 alphabet, lowercase: a character's value is its index.
    static let alphabet = Array("abcdefghijklmnopqrstuvwxyz234567".utf8)

    /// The SHA-256 digest: 32 bytes.
    public let bytes: [UInt8]

    /// The fingerprint of a certificate whose SubjectPublicKeyInfo is `spki` (its DER bytes).
    public init(spki: some Sequence<UInt8>) {
        bytes = Array(SHA256.hash(data: Array(spki)))
    }

    /// A fingerprint from its 32 bytes (a digest computed elsewhere); nil for any other length.
    public init?(digest: some Sequence<UInt8>) {
        let bytes = Array(digest)
        guard bytes.count == Self.byteCount else { return nil }
        self.bytes = bytes
    }

    /// The readable form, as in `chirp:abcd-efgh-...-x` (see ``Fingerprint``).
    public var description: String {
        let data = Self.base32(bytes)
        let characters = data + [Self.checkCharacter(for: data)]
        var text = Self.prefix
        for (index, character) in characters.enumerated() {
            if index > 0, index % 4 == 0 { text += "-" }
            text.unicodeScalars.append(Unicode.Scalar(character))
        }
        return text
    }

    /// The first 8 characters, as in `chirp:abcd-efgh`: enough to tell a handful of devices apart on a screen, not
    /// to identify one (compare or type the whole ``description`` for that).
    public var short: String {
        String(description.prefix(Self.prefix.count + 9))
    }

    /// Reads a fingerprint in its readable form: the prefix `chirp:` is optional, case does not matter, dashes and
    /// spaces may be left out or put anywhere.
    ///
    /// - Throws: ``FingerprintError`` saying what is wrong (a character that base32 does not have, a missing or an
    ///   extra character, a check character that does not match), in a sentence to show as it is.
    public init(parsing text: String) throws(FingerprintError) {
        var rest = Substring(text.trimmingWhitespace())
        if rest.lowercased().hasPrefix(Self.prefix) { rest = rest.dropFirst(Self.prefix.count) }
        var values: [UInt8] = []
        values.reserveCapacity(Self.characterCount)
        var position = 0
        for character in rest {
            if character == "-" || character == " " { continue }
            position += 1
            guard let value = Self.value(of: character) else {
                throw FingerprintError(.invalidCharacter(character, position: position))
            }
            values.append(value)
        }
        guard !values.isEmpty else { throw FingerprintError(.empty) }
        guard values.count == Self.characterCount else { throw FingerprintError(.wrongLength(values.count)) }
        let data = values.prefix(Self.dataCharacterCount).map { Self.alphabet[Int($0)] }
        guard Self.checkCharacter(for: data) == Self.alphabet[Int(values[Self.dataCharacterCount])],
            let bytes = Self.bytes(fromBase32: values.prefix(Self.dataCharacterCount))
        else { throw FingerprintError(.checkFailed) }
        self.bytes = bytes
    }

    /// Encoded as its readable form (a JSON string).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    /// Decoded from its readable form, with ``init(parsing:)``'s sentence when it is not one.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        let fingerprint: Fingerprint
        do {
            fingerprint = try Fingerprint(parsing: text)
        } catch {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: error.description)
        }
        self = fingerprint
    }

    /// Byte order, for a stable order in lists.
    public static func < (lhs: Fingerprint, rhs: Fingerprint) -> Bool {
        lhs.bytes.lexicographicallyPrecedes(rhs.bytes)
    }

    // MARK: - Base32 and the check character

    /// The base32 characters (ASCII) of `bytes`, most significant bit first, the last one padded with 0 bits.
    static func base32(_ bytes: [UInt8]) -> [UInt8] {
        var characters: [UInt8] = []
        characters.reserveCapacity((bytes.count * 8 + 4) / 5)
        var buffer: UInt32 = 0
        var bits = 0
        for byte in bytes {
            buffer = (buffer << 8) | UInt32(byte)
            bits += 8
            while bits >= 5 {
                bits -= 5
                characters.append(alphabet[Int((buffer >> UInt32(bits)) & 31)])
            }
        }
        if bits > 0 { characters.append(alphabet[Int((buffer << UInt32(5 - bits)) & 31)]) }
        return characters
    }

    /// The 32 bytes that 52 base32 values stand for; nil when the padding bits of the last one are not 0 (a mistyped
    /// last character that the check character happened not to catch cannot make a different fingerprint).
    static func bytes(fromBase32 values: ArraySlice<UInt8>) -> [UInt8]? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(byteCount)
        var buffer: UInt32 = 0
        var bits = 0
        for value in values {
            buffer = (buffer << 5) | UInt32(value)
            bits += 5
            if bits >= 8 {
                bits -= 8
                bytes.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits)))
            }
        }
        guard bytes.count == byteCount, buffer & ((1 << UInt32(bits)) - 1) == 0 else { return nil }
        return bytes
    }

    /// Luhn mod 32 over base32 characters: from the right, every other value doubled (its two base-32 digits
    /// added), the check value what brings the sum to a multiple of 32. Doubling is a permutation of 0...31, so any
    /// one character changed changes the sum.
    static func checkCharacter(for characters: [UInt8]) -> UInt8 {
        var factor = 2
        var sum = 0
        for character in characters.reversed() {
            let value = Int(alphabet.firstIndex(of: character) ?? 0)
            let addend = factor * value
            sum += addend / 32 + addend % 32
            factor = factor == 2 ? 1 : 2
        }
        return alphabet[(32 - sum % 32) % 32]
    }

    /// The base32 value of a character, any case; nil for a character the alphabet does not have.
    static func value(of character: Character) -> UInt8? {
        guard let ascii = character.asciiValue else { return nil }
        switch ascii {
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return ascii - UInt8(ascii: "a")
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return ascii - UInt8(ascii: "A")
        case UInt8(ascii: "2")...UInt8(ascii: "7"): return ascii - UInt8(ascii: "2") + 26
        default: return nil
        }
    }
}

extension String {
    /// The string without spaces, tabs and line breaks at either end.
    func trimmingWhitespace() -> Substring {
        guard let first = firstIndex(where: { !$0.isWhitespace }), let last = lastIndex(where: { !$0.isWhitespace })
        else { return "" }
        return self[first...last]
    }
}
