/// How much of what a connection queued was handed to the channel, for ``RequestDelivery``: a frame's mark (where it
/// stands among what was queued, ``OutboundQueue/endMark(ofFrameSized:)``) says whether it was.
///
/// Frames sent whole leave in the order they were queued, so one count of bytes tells which of them were handed over:
/// those that end at or before it. Frames sent in parts (``PartScheduler``) leave interleaved with them, but start in
/// the order they were queued: one count of such frames tells which of them started, and a frame counts as handed
/// over from its first part on (the peer may have it whole later). A mark says which count it belongs to.
struct HandedOver: Equatable, Sendable {
    /// Bytes of the frames sent whole, handed over (``OutboundQueue/handedOverThrough``).
    var bytes: UInt64
    /// Frames sent in parts whose first part was handed over (``PartScheduler/startedThrough``).
    var partedFrames: UInt64 = 0

    /// The bit of a mark that says it counts frames sent in parts, not bytes.
    static let partedBit: UInt64 = 1 << 63

    /// The mark of the `rank`th frame sent in parts.
    static func partedMark(_ rank: UInt64) -> UInt64 { partedBit | rank }

    /// Whether the frame of `mark` was handed over (`UInt64.max`, a frame never queued: no).
    func includes(_ mark: UInt64) -> Bool {
        guard mark != .max else { return false }
        if mark & Self.partedBit != 0 { return mark & ~Self.partedBit <= partedFrames }
        return mark <= bytes
    }
}
