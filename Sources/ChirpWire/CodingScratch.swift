import NIOCore
import NIOPosix

/// What the message path reuses on each thread instead of allocating it per message or sharing it behind a lock:
/// the fast JSON coders (with their buffers and node tables) and the wire names of the types seen.
///
/// Each thread has its own (NIO's `ThreadSpecificVariable`): the event loops that decode, and the app's threads that
/// send. Nothing in it is ever touched by another thread, so no lock is taken. A coder found busy (a value whose
/// `Codable` conformance encodes or decodes another message on the same thread) is not shared: a fresh one serves.
package final class CodingScratch {
    // @unchecked below: an instance is only ever reached through `current`, from the thread it belongs to.
    private static let current = ThreadSpecificVariable<CodingScratch>()

    private let encoder = FastJSONEncoder()
    private let decoder = FastJSONDecoder()
    // `@exclusivity(unchecked)`: one thread only (see `current`), no overlapping accesses.
    @exclusivity(unchecked) private var typeNames: [ObjectIdentifier: String] = [:]
    /// The buffer the last small frame was built in, copied out since: the next frame is built in its memory.
    @exclusivity(unchecked) private var frameBuffer: ByteBuffer?

    /// This thread's scratch state.
    package static var forThisThread: CodingScratch {
        if let scratch = current.currentValue { return scratch }
        let scratch = CodingScratch()
        current.currentValue = scratch
        return scratch
    }

    /// This thread's encoder, or a new one when it is in use.
    var availableEncoder: FastJSONEncoder { encoder.isBusy ? FastJSONEncoder() : encoder }

    /// This thread's decoder, or a new one when it is in use.
    var availableDecoder: FastJSONDecoder { decoder.isBusy ? FastJSONDecoder() : decoder }

    /// An empty buffer to build a frame in: the memory of the last one given back, when there is one.
    package func takeFrameBuffer() -> ByteBuffer? {
        guard var buffer = frameBuffer.take() else { return nil }
        buffer.clear()
        return buffer
    }

    /// Keeps `frame`'s memory for the next frame, if it is at most `limit` bytes (frames that size are copied out by
    /// the connections, so nothing else holds them; a larger one may be queued as it is, and is let go).
    package func giveBack(_ frame: ByteBuffer, ifAtMost limit: Int) {
        if frame.readableBytes <= limit && frame.capacity <= 4 * limit { frameBuffer = frame }
    }

    /// The wire name of `type` as this thread last resolved it, or `resolve()`'s answer, kept (nothing is kept when
    /// it throws).
    package func typeName(of type: Any.Type, resolve: () throws -> String) rethrows -> String {
        let key = ObjectIdentifier(type)
        if let name = typeNames[key] { return name }
        let name = try resolve()
        typeNames[key] = name
        return name
    }
}

extension CodingScratch: @unchecked Sendable {}
