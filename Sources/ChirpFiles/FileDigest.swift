import Crypto
import Foundation

/// The SHA-256 of a file, read a piece at a time (never the whole file in memory).
enum FileDigest {
    static let pieceSize = 1 << 20

    static func sha256(ofFileAt path: String) throws -> String {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw FileTransferError(.fileError, "cannot open \(path)")
        }
        defer { try? handle.close() }
        var hasher = SHA256()
        while true {
            let piece = try handle.read(upToCount: pieceSize) ?? Data()
            if piece.isEmpty { break }
            hasher.update(data: piece)
        }
        return hex(hasher.finalize())
    }

    /// Feeds the first `count` bytes of the file at `path` to `hasher`, a piece at a time.
    static func update(_ hasher: inout SHA256, withFileAt path: String, count: Int64) throws {
        guard count > 0 else { return }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw FileTransferError(.fileError, "cannot open \(path)")
        }
        defer { try? handle.close() }
        var left = count
        while left > 0 {
            let piece = try handle.read(upToCount: Int(min(left, Int64(pieceSize)))) ?? Data()
            guard !piece.isEmpty else {
                throw FileTransferError(.fileError, "\(path) is shorter than \(count) bytes")
            }
            hasher.update(data: piece)
            left -= Int64(piece.count)
        }
    }

    /// A digest as lowercase hexadecimal digits.
    static func hex(_ digest: SHA256.Digest) -> String {
        digest.map { String(format: "%02x", $0) }.joined()
    }

    /// The name of the partial file of a transfer: a digest of what identifies the file (its SHA-256, size and
    /// name), so that an offer of the same file after a dropped connection, or a restart, finds it again.
    static func partialName(sha256: String, size: Int64, name: String) -> String {
        let key = SHA256.hash(data: Data("\(sha256)\n\(size)\n\(name)".utf8))
        return key.prefix(16).map { String(format: "%02x", $0) }.joined() + ".part"
    }

    static func isHex64(_ text: String) -> Bool {
        text.utf8.count == 64 && text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }
}

/// A SHA-256 in progress that may cross tasks. `SHA256` is a copy-on-write value (as `Array` is: a copy shares its
/// state until one of them is updated), which swift-crypto does not mark `Sendable`; it is kept under a lock here and
/// updated by one task at a time.
struct RunningSHA256: @unchecked Sendable {
    var hasher = SHA256()
}
