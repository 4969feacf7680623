/// A DNS TXT record as DNS-SD uses it (RFC 6763 section 6): a sequence of `key=value` strings, each preceded by
/// its length in one byte.
///
/// Chirp reserves the keys in ``TXTRecord/ReservedKey``; user metadata takes any other key.
package struct TXTRecord: Sendable, Equatable {
    /// Keys Chirp writes itself.
    package enum ReservedKey {
        /// The stable peer id.
        package static let peerID = "id"
        /// The display name.
        package static let name = "name"
        /// The wire protocol version.
        package static let protocolVersion = "pv"
        /// `1` when the peer requires a shared secret, `id` when it uses a device identity.
        package static let secure = "sec"
        /// The device identity's fingerprint (`chirp:...`), with `sec=id`.
        package static let fingerprint = "fp"

        package static let all: Set<String> = [peerID, name, protocolVersion, secure, fingerprint]
    }

    /// The entries, in the order they are written.
    private(set) var entries: [(key: String, value: String)]

    package init(_ entries: [(key: String, value: String)] = []) {
        self.entries = entries
    }

    package static func == (lhs: TXTRecord, rhs: TXTRecord) -> Bool {
        lhs.entries.elementsEqual(rhs.entries) { $0.key == $1.key && $0.value == $1.value }
    }

    package subscript(key: String) -> String? {
        let lowered = key.lowercased()
        return entries.first { $0.key.lowercased() == lowered }?.value
    }

    /// All entries as a dictionary (the first of duplicate keys wins, as RFC 6763 says).
    package var dictionary: [String: String] {
        var result: [String: String] = [:]
        for entry in entries where result[entry.key] == nil { result[entry.key] = entry.value }
        return result
    }

    package mutating func set(_ key: String, _ value: String) {
        entries.removeAll { $0.key.lowercased() == key.lowercased() }
        entries.append((key, value))
    }

    /// Why `key`/`value` cannot be a TXT entry, or `nil` when it can.
    package static func problem(key: String, value: String) -> String? {
        if key.isEmpty { return "a TXT key must not be empty" }
        if key.utf8.contains(where: { $0 == UInt8(ascii: "=") || $0 < 0x20 || $0 > 0x7E }) {
            return "TXT key '\(key)' must be printable ASCII without '='"
        }
        if key.utf8.count + 1 + value.utf8.count > 255 {
            return "TXT entry '\(key)' is \(key.utf8.count + 1 + value.utf8.count) bytes; at most 255 fit"
        }
        return nil
    }

    /// The wire form: length-prefixed `key=value` strings. Entries that cannot be encoded are skipped (they are
    /// rejected earlier, by ``Configuration`` validation).
    package var bytes: [UInt8] {
        var out: [UInt8] = []
        for (key, value) in entries where Self.problem(key: key, value: value) == nil {
            let entry = Array("\(key)=\(value)".utf8)
            out.append(UInt8(entry.count))
            out.append(contentsOf: entry)
        }
        if out.isEmpty { out = [0] }  // an empty TXT record is one empty string
        return out
    }

    /// Parses the wire form; malformed parts (a length running past the end, an entry without a key) are skipped.
    package init(bytes: some Collection<UInt8>) {
        var entries: [(key: String, value: String)] = []
        var index = bytes.startIndex
        while index != bytes.endIndex {
            let length = Int(bytes[index])
            index = bytes.index(after: index)
            guard let end = bytes.index(index, offsetBy: length, limitedBy: bytes.endIndex) else { break }
            let entry = bytes[index..<end]
            index = end
            guard !entry.isEmpty else { continue }
            if let equals = entry.firstIndex(of: UInt8(ascii: "=")) {
                let key = String(decoding: entry[entry.startIndex..<equals], as: UTF8.self)
                let value = String(decoding: entry[entry.index(after: equals)...], as: UTF8.self)
                if !key.isEmpty { entries.append((key, value)) }
            } else {
                entries.append((String(decoding: entry, as: UTF8.self), ""))
            }
        }
        self.entries = entries
    }
}
