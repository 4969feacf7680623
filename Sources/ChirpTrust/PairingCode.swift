import Crypto

/// The 6-digit code both sides of a pairing show, for a person to compare (``PairingExchange``).
///
/// It is SHA-256(fpInitiator || fpResponder || nA || nB), read as a big-endian 256-bit number, modulo 1,000,000,
/// written with 6 digits (leading zeros kept): in Python,
/// `int.from_bytes(hashlib.sha256(fp_i + fp_r + n_a + n_b).digest(), "big") % 10**6`.
package struct PairingCode: Sendable, Hashable, CustomStringConvertible {
    /// The code as a number, 0 ..< 1,000,000.
    package let value: Int

    /// The code of an exchange between the initiator whose fingerprint is `initiator` and the responder whose
    /// fingerprint is `responder`, with their nonces `initiatorNonce` (nA) and `responderNonce` (nB).
    package init(
        initiator: Fingerprint, responder: Fingerprint, initiatorNonce: [UInt8], responderNonce: [UInt8]
    ) {
        var hash = SHA256()
        hash.update(data: initiator.bytes)
        hash.update(data: responder.bytes)
        hash.update(data: initiatorNonce)
        hash.update(data: responderNonce)
        value = hash.finalize().reduce(0) { remainder, byte in (remainder * 256 + Int(byte)) % 1_000_000 }
    }

    /// Six digits, as in `042917`.
    package var description: String {
        let digits = String(value)
        return String(repeating: "0", count: 6 - digits.count) + digits
    }
}
