import ChirpWire
import NIOCore

/// The large frames of one connection whose peer reassembles parts (``Hello/acceptsParts``), cut into part frames
/// that take turns: a pure state machine inside ``OutboundQueue``.
///
/// A frame is added whole (``add(_:)``) and leaves as parts of at most ``PartFrame/partSize`` bytes
/// (``nextPart(wholeUpTo:)``), or whole when its turn comes before its first part and it is no larger than the caller
/// says (a link fast enough to carry it at once: ``PartBudget/wholeFrameBytes``). Open streams go round-robin, one
/// part each in turn; at most ``PartFrame/maximumOpenStreams`` are open, and a new one opens only while the open ones
/// hold fewer than ``PartFrame/openStreamsBudget`` bytes (the receiver's bounds); the rest wait in the order they were
/// added. Streams therefore start (their first part is
/// taken) in the order their frames were added: ``startedThrough`` counts them.
struct PartScheduler {
    /// One large frame on its way out.
    struct Stream {
        var id: UInt32
        /// What is left to send of the frame (a slice of `whole`).
        var rest: ByteBuffer
        /// The whole frame, whose memory may serve the next large one once its last part is written.
        var whole: ByteBuffer
        /// Its rank among the frames added (1, 2, ...).
        var sequence: UInt64
        var started = false
    }

    /// One part to write: its header's fields and its slice of the frame; or, when ``isWhole``, the frame itself, to
    /// write as it is (no part header).
    struct Part {
        var stream: UInt32
        var flags: UInt8
        var slice: ByteBuffer
        /// The whole frame, when this part is its last.
        var completes: ByteBuffer?
        /// The slice is the whole frame, which travels as a frame of its own rather than as a part.
        var isWhole = false
    }

    /// The most bytes of a frame in one part: ``PartFrame/partSize`` (smaller in tests).
    let partSize: Int
    private var open = CircularBuffer<Stream>(initialCapacity: PartFrame.maximumOpenStreams)
    private var waiting = CircularBuffer<Stream>()
    /// The sizes of the open streams' frames, together.
    private var openBytes = 0
    private var nextStreamID: UInt32 = 0
    /// Frames added so far: the last one's rank.
    private(set) var added: UInt64 = 0
    /// The rank of the last frame whose first part was taken: every frame up to it has started.
    private(set) var startedThrough: UInt64 = 0

    init(partSize: Int = PartFrame.partSize) {
        self.partSize = partSize
    }

    var isEmpty: Bool { open.isEmpty }

    /// Adds a complete frame (length prefix included); returns its rank.
    mutating func add(_ frame: ByteBuffer) -> UInt64 {
        added += 1
        let stream = Stream(id: 0, rest: frame, whole: frame, sequence: added)
        if waiting.isEmpty && canOpen {
            openStream(stream)
        } else {
            waiting.append(stream)
        }
        return added
    }

    private var canOpen: Bool { open.count < PartFrame.maximumOpenStreams && openBytes < PartFrame.openStreamsBudget }

    private mutating func openStream(_ stream: Stream) {
        var stream = stream
        stream.id = nextStreamID
        nextStreamID &+= 1
        openBytes += stream.whole.readableBytes
        open.append(stream)
    }

    /// The next part, from the stream whose turn it is; `nil` when no stream is open. A stream not started yet whose
    /// frame is at most `wholeUpTo` bytes leaves whole, in one go (``Part/isWhole``).
    mutating func nextPart(wholeUpTo: Int = 0) -> Part? {
        guard var stream = open.popFirst() else { return nil }
        if !stream.started && stream.whole.readableBytes <= wholeUpTo {
            startedThrough = stream.sequence
            openBytes -= stream.whole.readableBytes
            while canOpen, let next = waiting.popFirst() { openStream(next) }
            return Part(
                stream: stream.id, flags: PartFrame.first | PartFrame.last, slice: stream.whole,
                completes: stream.whole, isWhole: true)
        }
        var flags: UInt8 = 0
        if !stream.started {
            stream.started = true
            startedThrough = stream.sequence
            flags |= PartFrame.first
        }
        let size = min(partSize, stream.rest.readableBytes)
        let slice = stream.rest.readSlice(length: size) ?? ByteBuffer()
        guard stream.rest.readableBytes == 0 else {
            open.append(stream)
            return Part(stream: stream.id, flags: flags, slice: slice, completes: nil)
        }
        openBytes -= stream.whole.readableBytes
        while canOpen, let next = waiting.popFirst() { openStream(next) }
        return Part(stream: stream.id, flags: flags | PartFrame.last, slice: slice, completes: stream.whole)
    }

    /// Drops every stream (the connection closed).
    mutating func removeAll() {
        open.removeAll()
        waiting.removeAll()
        openBytes = 0
    }
}
