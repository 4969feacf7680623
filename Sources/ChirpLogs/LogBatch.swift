import Foundation

// A batch's layout, apart from the messages of the exchange (LogProtocol.swift): it needs no more than Foundation, so
// the fuzz target for batches (Fuzz/Sources/FuzzLogs) compiles this very file.

/// The payload of a batch message (type ``LogProtocol/batchTypeName``), see `Docs/Logging.md`:
///
///     u8 version (1) | u64 subscription | u32 count | count entries (RecordCoding)
extension LogProtocol {
    /// Batch header: version byte, subscription id, record count.
    static let batchHeaderSize = 1 + 8 + 4

    /// Appends a batch's header: version 1, the subscription, the number of entries that follow.
    static func writeBatchHeader(subscription: UInt64, count: Int, into bytes: inout [UInt8]) {
        bytes.append(1)
        RecordCoding.writeInteger(subscription, into: &bytes)
        RecordCoding.writeInteger(UInt32(truncatingIfNeeded: count), into: &bytes)
    }

    /// Sets the entry count of a batch whose header starts `bytes`.
    static func setBatchCount(_ count: Int, in bytes: inout [UInt8]) {
        RecordCoding.setInteger(UInt32(truncatingIfNeeded: count), at: 1 + 8, in: &bytes)
    }

    /// Parses a batch payload: its subscription and its entries (read in place, in one pass).
    ///
    /// Only a header that is not version 1, or too short to hold one, is refused as a whole. After it, each entry
    /// whose length fits in the batch is decoded on its own: one that does not decode is listed in
    /// ``ParsedBatch/undecodable`` and the others still arrive (a damaged record in an app's spool costs that record,
    /// not its whole batch). Where the entries stop matching the header (a length past the end, fewer entries than
    /// claimed, bytes left over) parsing stops there; ``ParsedBatch/damage`` says what was wrong.
    static func parseBatch(_ data: Data, origin: RecordCoding.Origin) throws -> ParsedBatch {
        try data.withUnsafeBytes { bytes in
            var reader = RecordCoding.EntryReader(bytes)
            guard reader.remaining >= 1, try reader.integer(UInt8.self) == 1 else {
                throw RecordCoding.DecodingError(description: "unknown batch version")
            }
            guard reader.remaining >= 12 else {
                throw RecordCoding.DecodingError(description: "truncated batch header")
            }
            var batch = ParsedBatch(subscription: try reader.integer(UInt64.self))
            let count = Int(try reader.integer(UInt32.self))
            batch.records.reserveCapacity(min(count, 1024))  // the count is the peer's: grow as the entries decode
            // Every pass consumes at least the 4 bytes of a length, or ends the loop: a lying count cannot spin it.
            for _ in 0..<count {
                guard var body = reader.entryBody() else {
                    batch.note(
                        reader.remaining == 0
                            ? "the batch claims \(count) records but holds \(batch.entryCount)"
                            : "record \(batch.entryCount + 1) of \(count) runs past the end of the batch")
                    break
                }
                let entry = body  // where the entry starts, for its sequence number if it does not decode
                do {
                    batch.records.append(try body.record(origin: origin))
                } catch {
                    let sequence = entry.peekSequence()
                    if batch.undecodable.isEmpty {
                        let which = sequence.map { "record \($0)" } ?? "a record shorter than its sequence number"
                        batch.note("\(which) does not decode: \(error)")
                    }
                    batch.undecodable.append((before: batch.records.count, sequence: sequence))
                }
            }
            if reader.remaining != 0, batch.entryCount == count {
                batch.note("\(reader.remaining) stray bytes after the last record")
            }
            return batch
        }
    }
}

/// A batch as ``LogProtocol/parseBatch(_:origin:)`` read it: the records that decoded, and where entries that did not
/// decode sat among them.
struct ParsedBatch: Sendable {
    /// The subscription the batch belongs to.
    var subscription: UInt64
    /// The records that decoded, in order.
    var records: [LogRecord] = []
    /// The entries that did not decode, in order: each with the number of ``records`` that came before it, and its
    /// sequence number when at least that much of it is there.
    var undecodable: [(before: Int, sequence: UInt64?)] = []
    /// What is wrong with the batch, for the viewer to report: the first entry that did not decode, and where the
    /// entries stopped matching the header; `nil` for a sound batch.
    var damage: String?

    /// The entries read: records and undecodable ones.
    var entryCount: Int { records.count + undecodable.count }

    /// The sequence number of the last entry, decoded or not, when known: what a viewer acknowledges.
    var lastSequence: UInt64? {
        if let last = undecodable.last, last.before == records.count, let sequence = last.sequence { return sequence }
        return records.last?.sequence
    }

    /// Adds `problem` to ``damage``.
    mutating func note(_ problem: String) {
        damage = damage.map { "\($0); \(problem)" } ?? problem
    }
}
