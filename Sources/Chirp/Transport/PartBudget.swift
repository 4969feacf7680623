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
/// a slow link (its congestion window) does not count as speed. At 10 Mbit/s a drain writes one part, as before. Only
/// the time the queue held large frames counts: from a drain that left some queued to the next drain, whose writable
/// window the link decided. A drain that wrote the last of them is followed by the app's pause, not the link's, so
/// neither its bytes nor the time to the next drain count, and a burst after a pause starts at the speed measured
/// before it.
///
/// By the same rule a large frame that the link carries within about ``target`` at the rate measured leaves whole
/// (``wholeFrameBytes``): what is queued after it waits no longer than behind the parts a drain writes, and the frame
/// costs neither part headers nor a reassembly on the other side. NIO then holds it and writes as much as the socket
/// takes at each writable window, where parts are handed over a drain at a time: on loopback, `bulk.1MiB` ran at
/// 0.6-0.8× the build before parts with every 1 MiB message in parts (bench-results/HISTORY.md, 2026-11-29 and
/// 2026-12-07). At 1 Gbit/s (125 KB per millisecond) every frame over a part still leaves in parts.
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
    /// The largest frame that leaves whole rather than in parts: the bytes the link took per ``target`` over the last
    /// measurement, or over an earlier one while the last measured more than half of that; 0 (none) until one ends.
    /// ``OutboundQueue`` sends in parts only frames over a part.
    private(set) var wholeFrameBytes = 0

    /// The most bytes the kernel is to hold unsent (Linux `TCP_NOTSENT_LOWAT`), or 0 for the system's default (no
    /// bound): ``slowLinkUnsentLimit`` until the link took at least a part per ``target``, none from then on.
    ///
    /// On a slow link the bound keeps what the kernel took from going out before a small frame written after it: a
    /// request behind a large message at 10 Mbit/s waits about one part's time beyond the link's round trip
    /// (Docs/Reliability.md). On a link that carries a part within the target it holds nothing up for long, and it
    /// costs: the kernel takes the bulk in pieces of the bound, and the receiver reads it in more, smaller pieces, at
    /// about 1.5 times the CPU per MiB (`bulk.1MiB` 1.5-1.6 GB/s with it, 1.9-2.6 without, bench-results/HISTORY.md,
    /// 2026-12-07).
    var unsentLimit: Int { wholeFrameBytes >= partSize ? 0 : Self.slowLinkUnsentLimit }

    /// The unsent bound on a slow link (and before the link was measured): a quarter of a part.
    static let slowLinkUnsentLimit = 32 * 1024
    /// The last drain, when it left large frames queued: the time to the next one is the link's.
    private var lastBusyDrain: (at: NIODeadline, written: Int)?
    /// The current measurement: the time the queue held large frames, and the bytes written in it.
    private var busyNanoseconds: Int64 = 0
    private var busyBytes = 0

    init(partSize: Int = PartFrame.partSize) {
        self.partSize = partSize
        self.bytes = partSize
    }

    /// A drain wrote `written` bytes of parts or of large frames sent whole (more than none) at `now`, and left none
    /// queued (`emptied`) or some; once the queue held large frames for a ``window``, the budget of the next drains
    /// follows what the link took in it.
    mutating func drained(_ written: Int, at now: NIODeadline, emptied: Bool = false) {
        if let last = lastBusyDrain {
            busyNanoseconds += (now - last.at).nanoseconds
            busyBytes += last.written
        }
        lastBusyDrain = emptied ? nil : (now, written)
        guard busyNanoseconds >= Self.window.nanoseconds else { return }
        // The bytes the link took per `target`, over the window: whole parts, at least one.
        let perTarget = Int(Int64(busyBytes) * Self.target.nanoseconds / busyNanoseconds)
        bytes = min(max(perTarget / partSize, 1), Self.maximumParts) * partSize
        // Up at once; down only below half: a window in which a busy CPU slowed the drains a little does not send the
        // next 1 MiB frames in parts, whose own cost then keeps the measured speed down (on loopback, `bulk.1MiB` had
        // runs at the speed of parts).
        if perTarget > wholeFrameBytes || perTarget < wholeFrameBytes / 2 { wholeFrameBytes = perTarget }
        busyNanoseconds = 0
        busyBytes = 0
    }
}
