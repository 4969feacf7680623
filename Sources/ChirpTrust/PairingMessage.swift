/// A message of the pairing exchange (``PairingExchange``), and its byte layout: one byte for the kind, then 32
/// bytes.
///
/// | kind byte | message | sent by | the 32 bytes |
/// | --- | --- | --- | --- |
/// | 1 | ``commit(_:)`` | initiator, first | SHA-256(nA) |
/// | 2 | ``nonce(_:)`` | responder, in answer | nB |
/// | 3 | ``reveal(_:)`` | initiator, last | nA |
package enum PairingMessage: Sendable, Equatable {
    /// The initiator's commitment to its nonce: SHA-256(nA).
    case commit([UInt8])
    /// The responder's nonce, nB, sent once it holds the commitment.
    case nonce([UInt8])
    /// The initiator's nonce, nA, which the responder checks against the commitment.
    case reveal([UInt8])

    /// The length of every message: the kind byte and 32 bytes.
    package static let byteCount = 33

    /// The message's 33 bytes.
    package var bytes: [UInt8] {
        switch self {
        case .commit(let body): [1] + body
        case .nonce(let body): [2] + body
        case .reveal(let body): [3] + body
        }
    }

    /// The message `bytes` hold; nil unless they are 33 bytes starting with 1, 2 or 3.
    package init?(bytes: some Collection<UInt8>) {
        guard bytes.count == Self.byteCount, let kind = bytes.first else { return nil }
        let body = Array(bytes.dropFirst())
        switch kind {
        case 1: self = .commit(body)
        case 2: self = .nonce(body)
        case 3: self = .reveal(body)
        default: return nil
        }
    }

    /// The message's name, for errors: `commit`, `nonce`, `reveal`.
    package var name: String {
        switch self {
        case .commit: "commit"
        case .nonce: "nonce"
        case .reveal: "reveal"
        }
    }
}
