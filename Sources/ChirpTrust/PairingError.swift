/// Why a pairing exchange stopped (``PairingExchange``): ``kind`` to match on, ``description`` a sentence to show.
/// Every one ends the exchange; pairing again starts a new one.
package struct PairingError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong.
    package enum Kind: Sendable, Equatable {
        /// A message (or `start()`) came when another was expected.
        case outOfOrder(expected: String, got: String)
        /// A message whose body is not 32 bytes.
        case malformed(String, byteCount: Int)
        /// The initiator's revealed nonce does not hash to the commitment it sent: it changed its nonce after
        /// seeing ours, or something in between altered the messages.
        case commitmentMismatch
        /// The exchange is over (it showed its code, or failed): an exchange is used once.
        case finished
    }

    /// What went wrong.
    package let kind: Kind

    /// The error of `kind`.
    package init(_ kind: Kind) { self.kind = kind }

    /// The sentence.
    package var description: String {
        switch kind {
        case .outOfOrder(let expected, let got):
            "pairing failed: got \(got) while waiting for \(expected); start pairing again"
        case .malformed(let name, let byteCount):
            "pairing failed: the \(name) message holds \(byteCount) bytes instead of 32; start pairing again"
        case .commitmentMismatch:
            "pairing failed: the other side's nonce does not match what it committed to, so someone may be tampering with the connection; do not trust this device, and start pairing again"
        case .finished:
            "this pairing exchange is over (an exchange is used once): start a new one"
        }
    }
}
