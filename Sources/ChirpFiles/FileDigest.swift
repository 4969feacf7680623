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
        return hasher.finalize().map { String(format: "%02x", $0) }.joined()
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
