import NIOCore

/// The first handler after TLS: gathers the bytes a connection reads until a whole ``Frame`` is there, and passes each
/// frame on, split by ``FrameDecoder`` (which checks the size limits).
///
/// Written here rather than used from NIO (`ByteToMessageHandler(FrameDecoder(...))` did this job until 2026-11-26)
/// for speed: `ByteToMessageHandler` is generic over its decoder and lives in another module, so the compiler does
/// not specialise it for ``FrameDecoder``; for every frame it takes its buffer out of a list and puts the rest back,
/// and asks the runtime for generic metadata. In `perf` of the `oneway.small` benchmark that glue took about 14% of
/// the receiver's CPU, more than the frame splitting it wraps. This handler keeps one buffer and one loop.
///
/// It behaves as `ByteToMessageHandler` does for what Chirp needs:
/// - frames are passed on in the order their bytes arrived, whatever the reads' boundaries;
/// - a frame that a handler further down causes to be read from inside its `channelRead` (re-entrancy) is passed on
///   after the frames already read;
/// - a ``FrameDecodingError`` is fired once (``PeerChannelHandler`` and ``HandshakeHandler`` close the connection on
///   it), and whatever arrives after it is dropped;
/// - when the channel closes in the middle of a frame, a ``FrameDecodingError/Reason/truncatedFrame(missing:)`` error
///   is fired before `channelInactive`.
///
/// Memory: at most one frame that has not arrived whole (``FrameDecoder`` refuses a frame over the limit as soon as
/// its length is read), plus the rest of the read that brought its first bytes. Bytes already passed on are given
/// back, so a long stream of small frames does not grow the buffer.
package final class FrameReader: ChannelInboundHandler {
    package typealias InboundIn = ByteBuffer
    package typealias InboundOut = Frame
    // `@exclusivity(unchecked)`: one event loop, no overlapping access (a re-entrant read goes to `readMeanwhile`,
    // never to `buffer` while it is being read); see PeerChannelHandler.

    @exclusivity(unchecked) private var decoder: FrameDecoder
    /// Bytes read and not yet passed on as frames.
    @exclusivity(unchecked) private var buffer: ByteBuffer?
    /// Bytes read while frames were being passed on (a handler further down read from inside its own `channelRead`).
    @exclusivity(unchecked) private var readMeanwhile: ByteBuffer?
    /// Frames are being passed on (this handler's `channelRead` is on the stack).
    @exclusivity(unchecked) private var passing = false
    /// A decoding error was fired: nothing more is read.
    @exclusivity(unchecked) private var failed = false
    /// The channel went inactive: no more frames are passed on.
    @exclusivity(unchecked) private var closed = false

    package init(_ decoder: FrameDecoder) {
        self.decoder = decoder
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !failed, !closed else { return }
        var bytes = unwrapInboundIn(data)
        if passing {
            Self.append(&bytes, to: &readMeanwhile)
            return
        }
        Self.append(&bytes, to: &buffer)
        passFrames(context: context)
    }

    package func channelInactive(context: ChannelHandlerContext) {
        closed = true
        if !failed, let rest = buffer.take(), rest.readableBytes > 0 {
            failed = true
            context.fireErrorCaught(FrameDecoder.truncation(of: rest))
        }
        context.fireChannelInactive()
    }

    /// Passes on every whole frame in `buffer`, then keeps what is left of an unfinished one.
    private func passFrames(context: ChannelHandlerContext) {
        passing = true
        defer { passing = false }
        // Taken out of `buffer` while frames are passed on: the local copy is the only reference to its memory, so
        // bytes appended to it later are not copied first.
        guard var bytes = buffer.take() else { return }
        while true {
            do {
                while let frame = try decoder.decodeFrame(from: &bytes) {
                    context.fireChannelRead(wrapInboundOut(frame))
                    // A handler further down closed the connection (it found the frame wrong, say): what follows is
                    // not passed on, as nothing is once the channel is inactive.
                    if closed { return }
                }
            } catch {
                failed = true
                readMeanwhile = nil
                context.fireErrorCaught(error)
                return
            }
            guard var more = readMeanwhile.take() else { break }
            if bytes.readableBytes == 0 {
                bytes = more
            } else {
                bytes.writeBuffer(&more)
            }
        }
        guard bytes.readableBytes > 0 else { return }  // nothing kept: the read's memory goes back to NIO
        // Part of a frame is left. When the bytes before it (passed on already) take more room than it does, move it
        // to the front: the next read is appended after it, and the buffer would otherwise grow with every read.
        // (When frames passed on still use that memory, NIO copies just the unfinished frame to memory of its own.)
        if bytes.readerIndex >= 2048, bytes.readerIndex >= bytes.readableBytes {
            bytes.discardReadBytes()
        }
        buffer = bytes
    }

    /// Appends `bytes` to what `pending` holds (or makes them what it holds).
    private static func append(_ bytes: inout ByteBuffer, to pending: inout ByteBuffer?) {
        guard var current = pending.take() else {
            pending = bytes
            return
        }
        current.writeBuffer(&bytes)
        pending = current
    }
}
