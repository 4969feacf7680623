import Chirp
import Foundation

// The messages of a file transfer (Docs/Files.md, "On the wire"). Every one but the chunk is JSON under a
// `chirp.file.*` type name, so that a peer in another language can send and receive files.

/// `chirp.file.offer` (request, sender to receiver): a file to send, or to send again after a dropped connection.
struct FileOffer: Codable, Sendable, ChirpMessage {
    static let chirpTypeName = "chirp.file.offer"
    /// The transfer's id: a UUID, the same for every offer of one transfer.
    var id: String
    /// The file's name as the sender gives it; the receiver sanitises it.
    var name: String
    /// The file's size in bytes.
    var size: Int64
    /// The SHA-256 of the whole file, 64 lowercase hexadecimal digits.
    var sha256: String
    /// The most payload bytes of one chunk.
    var chunkSize: Int
}

/// `chirp.file.offer.reply`: whether the receiver takes the file, and from which byte.
struct FileOfferReply: Codable, Sendable, ChirpMessage {
    static let chirpTypeName = "chirp.file.offer.reply"
    var accepted: Bool
    /// The first byte the receiver needs: 0, or what it kept of an earlier attempt.
    var offset: Int64
    /// Why the offer was refused (when `accepted` is false).
    var reason: String?
    /// `true` when the receiving app declined the file (rather than a refusal: too large, a bad offer). Left out
    /// otherwise; a sender that does not know the field reads a refusal with its `reason`.
    var declined: Bool?
}

/// `chirp.file.ack` (message, receiver to sender): every byte before `offset` is on the receiver's disk.
struct FileAck: Codable, Sendable, ChirpMessage {
    static let chirpTypeName = "chirp.file.ack"
    var id: String
    var offset: Int64
}

/// `chirp.file.cancel` (message, either way): the transfer stops; the receiver deletes its partial file (unless it
/// is the one that stopped and kept it: `reason` says so).
struct FileCancel: Codable, Sendable, ChirpMessage {
    static let chirpTypeName = "chirp.file.cancel"
    var id: String
    var reason: String
}

/// `chirp.file.finish` (request, sender to receiver): every chunk was acknowledged; check the file and keep it.
struct FileFinish: Codable, Sendable, ChirpMessage {
    static let chirpTypeName = "chirp.file.finish"
    var id: String
}

/// `chirp.file.finish.reply`: the file is in place under `name`, or why not.
struct FileFinishReply: Codable, Sendable, ChirpMessage {
    static let chirpTypeName = "chirp.file.finish.reply"
    var ok: Bool
    var name: String?
    var reason: String?
}

/// `chirp.file.chunk` (binary message, sender to receiver): the transfer's id as 16 bytes (the UUID's bytes), the
/// offset of the first byte as a big-endian UInt64, then the file's bytes.
enum FileChunk {
    static let typeName = "chirp.file.chunk"
    static let headerSize = 24

    static func encode(id: UUID, offset: Int64, bytes: Data) -> Data {
        var data = Data(capacity: headerSize + bytes.count)
        withUnsafeBytes(of: id.uuid) { data.append(contentsOf: $0) }
        withUnsafeBytes(of: UInt64(offset).bigEndian) { data.append(contentsOf: $0) }
        data.append(bytes)
        return data
    }

    /// The id, offset and bytes of a chunk's payload; `nil` when it is shorter than its header.
    static func decode(_ payload: Data) -> (id: UUID, offset: Int64, bytes: Data)? {
        guard payload.count >= headerSize else { return nil }
        let start = payload.startIndex
        var raw = [UInt8](repeating: 0, count: 16)
        raw.withUnsafeMutableBytes { $0.copyBytes(from: payload[start..<start + 16]) }
        let id = UUID(
            uuid: (
                raw[0], raw[1], raw[2], raw[3], raw[4], raw[5], raw[6], raw[7], raw[8], raw[9], raw[10], raw[11],
                raw[12], raw[13], raw[14], raw[15]
            ))
        var offset: UInt64 = 0
        for byte in payload[start + 16..<start + 24] { offset = offset << 8 | UInt64(byte) }
        guard offset <= UInt64(Int64.max) else { return nil }
        return (id, Int64(offset), payload[(start + headerSize)...])
    }
}
