import NIOCore

/// The wire form of a part frame (``FrameKind/part``, Docs/Protocol.md section 3): a slice of a large frame, so that
/// the frames queued after it go out between its slices instead of after all of it.
///
/// Body: stream id (UInt32), flags (UInt8: ``first``, ``last``), then bytes. The bytes of a stream's parts, first to
/// last, are exactly the frame as it would travel whole: its length prefix, its kind byte, its body.
package enum PartFrame {
    /// The bytes before a part's slice: the frame's length prefix and kind byte, the stream id, the flags.
    package static let headerSize = WireFormat.lengthPrefixSize + WireFormat.kindSize + 4 + 1
    /// Flag: the part opens its stream; its bytes start with the whole frame's length prefix and kind byte.
    package static let first: UInt8 = 0x01
    /// Flag: the part closes its stream; the frame is complete with its bytes.
    package static let last: UInt8 = 0x02
    /// The most bytes a sender puts in one part (and the size over which Chirp splits a frame).
    package static let partSize = 128 * 1024
    /// A sender has at most this many streams open at once; a receiver closes a connection that opens more.
    package static let maximumOpenStreams = 4
    /// A sender opens a stream only while the frames of its open streams hold fewer bytes than this together; a
    /// receiver closes a connection whose first part comes when they hold this many or more.
    package static let openStreamsBudget = 64 << 20
    /// A receiver keeps the memory of the last frame it reassembled, up to this size, for the next one
    /// (``PartAssembler``): 1 MiB messages and their headers, and no more per idle connection.
    package static let spareLimit = 2 << 20

    /// Writes the header of a part of stream `stream` whose slice is `sliceSize` bytes.
    package static func writeHeader(stream: UInt32, flags: UInt8, sliceSize: Int, into buffer: inout ByteBuffer) {
        buffer.writeInteger(UInt32(truncatingIfNeeded: WireFormat.kindSize + 4 + 1 + sliceSize))
        buffer.writeInteger(FrameKind.part.rawValue)
        buffer.writeInteger(stream)
        buffer.writeInteger(flags)
    }
}

/// Why part frames broke the rules (Docs/Protocol.md section 3): the receiver closes the connection.
package struct PartError: Error, Equatable, CustomStringConvertible {
    package var problem: String
    package var description: String { "part frames: \(problem)" }
}

/// Reassembles the part frames of one connection into the frames they carry: a pure state machine, fed the body of
/// each part frame in the order they arrive; it returns a frame when its last part arrived.
///
/// Bounds (Docs/Protocol.md section 3): a frame no larger than `maxFrameSize` (checked on the first part, before
/// anything is buffered), at most ``PartFrame/maximumOpenStreams`` streams at once, and a first part accepted only
/// while the open streams' frames hold fewer than ``PartFrame/openStreamsBudget`` bytes. Each stream's memory is
/// reserved at its first part, for the length that part declares. Any violation throws a ``PartError``, after which
/// the connection is to be closed.
///
/// Memory: the frame it returns is kept (up to ``PartFrame/spareLimit`` bytes), and the next stream is reassembled in
/// it when nothing else holds it by then (the frame was handled and let go). A fresh megabyte for every frame cost the
/// receiver a page fault per 4 KiB (the allocator gives large blocks back to the kernel when they are freed): a
/// fifth of its CPU in `bulk.1MiB`. When the app still holds the frame's bytes, `clear()` gives the new stream memory
/// of its own, and the app's bytes stay as they are.
package struct PartAssembler {
    private struct Assembly {
        /// The frame's kind byte and body, as far as they arrived.
        var bytes: ByteBuffer
        /// The kind byte and body's length, from the frame's length prefix.
        var length: Int
    }

    package let maxFrameSize: Int
    private var streams: [UInt32: Assembly] = [:]
    /// The memory of the last frame returned, for the next stream (see above).
    private var spare: ByteBuffer?
    /// The lengths the open streams declared, together.
    private(set) package var declaredBytes = 0

    package init(maxFrameSize: Int) {
        self.maxFrameSize = maxFrameSize
    }

    /// How many streams are in reassembly.
    package var openStreams: Int { streams.count }

    /// Takes the body of one part frame; returns the frame it completes, if it is a stream's last part.
    package mutating func add(_ body: ByteBuffer) throws(PartError) -> Frame? {
        var body = body
        guard let stream = body.readInteger(as: UInt32.self), let flags = body.readInteger(as: UInt8.self) else {
            throw PartError(problem: "a part shorter than its stream id and flags")
        }
        var assembly: Assembly
        if flags & PartFrame.first != 0 {
            guard streams[stream] == nil else { throw PartError(problem: "stream \(stream) opened twice") }
            guard let length = body.readInteger(as: UInt32.self),
                let kind = body.getInteger(at: body.readerIndex, as: UInt8.self)
            else {
                throw PartError(problem: "the first part of stream \(stream) is shorter than a length and a kind")
            }
            guard length > 0, Int(length) <= maxFrameSize else {
                throw PartError(
                    problem: "stream \(stream) announces a frame of \(length) bytes, over the limit of \(maxFrameSize)")
            }
            guard kind != FrameKind.part.rawValue, kind != FrameKind.hello.rawValue else {
                throw PartError(problem: "stream \(stream) carries a frame of kind 0x\(String(kind, radix: 16))")
            }
            guard streams.count < PartFrame.maximumOpenStreams else {
                throw PartError(problem: "more than \(PartFrame.maximumOpenStreams) streams open at once")
            }
            guard declaredBytes < PartFrame.openStreamsBudget else {
                throw PartError(
                    problem:
                        "a stream opened while the open ones hold \(declaredBytes) bytes (the budget is \(PartFrame.openStreamsBudget))"
                )
            }
            assembly = Assembly(bytes: buffer(for: Int(length)), length: Int(length))
            declaredBytes += Int(length)
        } else {
            guard let open = streams.removeValue(forKey: stream) else {
                throw PartError(problem: "a part of stream \(stream), which is not open")
            }
            assembly = open
        }
        guard assembly.bytes.readableBytes + body.readableBytes <= assembly.length else {
            streams[stream] = nil
            throw PartError(problem: "stream \(stream) carries more than the \(assembly.length) bytes it announced")
        }
        assembly.bytes.writeBuffer(&body)
        guard flags & PartFrame.last != 0 else {
            streams[stream] = assembly
            return nil
        }
        declaredBytes -= assembly.length
        guard assembly.bytes.readableBytes == assembly.length else {
            throw PartError(
                problem: "stream \(stream) ended after \(assembly.bytes.readableBytes) of its \(assembly.length) bytes")
        }
        if assembly.bytes.capacity <= PartFrame.spareLimit { spare = assembly.bytes }
        return Frame(kindAndBody: assembly.bytes)
    }

    /// Empty memory for a frame of `length` bytes: the spare's, when it is large enough.
    private mutating func buffer(for length: Int) -> ByteBuffer {
        if var reused = spare.take(), reused.capacity >= length {
            reused.clear()  // new memory instead when the last frame is still held
            return reused
        }
        var bytes = ByteBuffer()
        bytes.reserveCapacity(length)
        return bytes
    }
}
