/// The rule for a peer's name (`--name`), checked by the tools before they start, so that a bad name is a usage error
/// in the user's words rather than the transceiver's configuration error.
package enum PeerName {
    /// The longest name, in bytes of UTF-8 (the transceiver's own limit).
    package static let maximumBytes = 200

    /// Why `name` cannot be a peer's name, or `nil` when it can.
    package static func problem(with name: String) -> String? {
        if name.isEmpty { return "a name cannot be empty" }
        let bytes = name.utf8.count
        if bytes > maximumBytes { return "a name must be at most \(maximumBytes) bytes of UTF-8, got \(bytes)" }
        return nil
    }
}
