import ChirpWire
import NIOCore

/// How many bytes of parts one drain may write past the channel's writability: one part, unless the link took parts
/// so fast over the last ``window`` that more leave within about ``target``: a pure state machine inside
/// ``ConnectionOutbound``, fed the time and the bytes of parts each drain writes.
///
/// One part per writable window keeps a frame queued later behind at most one part (plus the kernel's unsent limit),
/// but on a fast link (loopback) it costs a system call, and a wake-up of the peer, per 128 KiB: `bulk.1MiB` ran at
/// 0.6× its speed with frames written whole. Parts written past the writability wait in NIO, and a frame queued after
/// them waits for them; so more than one part per drain only where they leave within about a millisecond: at
/// 128 KiB per millisecond and more (about 1 Gbit/s) measured over 10 ms, so that a burst the kernel takes at once on
/// a slow link (its congestion window) does not count as speed. At 10 Mbit/s a drain writes one part, as before.
struct PartBudget {
    /// How long the parts written past the writability may take to leave, at the rate measured.
    static let target: TimeAmount = .milliseconds(1)
    /// How long a measurement of the rate lasts.
    static let window: TimeAmount = .milliseconds(10)
    /// The most parts one drain writes.
    static let maximumParts = 8

    let partSize: Int
    /// The bytes of parts one drain may write now.
    private(set) var bytes: Int
    /// When the current measurement started, and the bytes of parts written since.
    private var windowStart: NIODeadline?
    private var windowBytes = 0

    init(partSize: Int = PartFrame.partSize) {
        self.partSize = partSize
        self.bytes = partSize
    }

    /// A drain wrote `written` bytes of parts (more than none) at `now`; the budget of the next ones follows. The
    /// bytes written when a measurement starts count in it: they leave during it.
    mutating func drained(_ written: Int, at now: NIODeadline) {
        guard let start = windowStart, now - start >= Self.window else {
            if windowStart == nil { windowStart = now }
            windowBytes += written
            return
        }
        // The bytes the link took per `target`, over the window: whole parts, at least one.
        let elapsed = max((now - start).nanoseconds, 1)
        let perTarget = Int(Int64(windowBytes) * Self.target.nanoseconds / elapsed)
        bytes = min(max(perTarget / partSize, 1), Self.maximumParts) * partSize
        windowStart = now
        windowBytes = written
    }
}
