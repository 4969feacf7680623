/// The sender's side of the flow control, as a value: which chunk goes next, and what an acknowledgement means. At
/// most `limit` bytes are sent and not acknowledged.
struct SendWindow: Equatable {
    /// The file's size.
    let size: Int64
    /// The most bytes in flight: window × chunk size.
    let limit: Int64
    /// The first byte not sent yet.
    private(set) var sent: Int64
    /// The first byte not acknowledged yet.
    private(set) var acknowledged: Int64

    init(size: Int64, limit: Int64, from offset: Int64) {
        self.size = size
        self.limit = max(limit, 1)
        self.sent = offset
        self.acknowledged = offset
    }

    /// The next chunk to send (its offset and length), or `nil` when everything is sent or the window is full.
    func nextChunk(chunkSize: Int) -> (offset: Int64, count: Int)? {
        guard sent < size, sent - acknowledged < limit else { return nil }
        let count = min(Int64(chunkSize), size - sent, limit - (sent - acknowledged))
        return (sent, Int(count))
    }

    /// Notes that `count` bytes went out.
    mutating func didSend(_ count: Int) { sent += Int64(count) }

    /// Notes an acknowledgement of every byte before `offset`; returns whether it moved the window (an old one, from
    /// before a resumption, does not; one past what was sent counts up to what was sent).
    mutating func acknowledge(_ offset: Int64) -> Bool {
        let clamped = min(offset, sent)
        guard clamped > acknowledged else { return false }
        acknowledged = clamped
        return true
    }

    /// Bytes sent and not acknowledged.
    var inFlight: Int64 { sent - acknowledged }

    /// Whether every byte is acknowledged.
    var isComplete: Bool { acknowledged >= size }
}
