import Chirp

/// One broadcast of the load: its position in the sender's sequence (0, 1, 2, ...).
struct LoadTick: Codable, Sendable, ChirpMessage {
    static let chirpTypeName = "load.tick"
    var seq: UInt64
}

/// Sent after the last tick: how many ticks were broadcast in all.
struct LoadEnd: Codable, Sendable, ChirpMessage {
    static let chirpTypeName = "load.end"
    var total: UInt64
}

/// A receiver's acknowledgement to the sender: it has seen every tick below `next` it is going to see.
/// The sender keeps at most its window of ticks beyond the slowest receiver's acknowledgement.
struct LoadAck: Codable, Sendable, ChirpMessage {
    static let chirpTypeName = "load.ack"
    var next: UInt64
}

/// A receiver's final counts, sent to the sender after ``LoadEnd``.
struct LoadReport: Codable, Sendable, ChirpMessage {
    static let chirpTypeName = "load.report"
    var summary: ReceiverSummary
}
