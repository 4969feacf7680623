import NIOCore

/// Errors raised by ``FrameDecoder`` when a peer sends something that is not a Chirp frame.
struct FrameDecodingError: Error, Equatable, CustomStringConvertible {
    enum Reason: Equatable {
        case emptyFrame
        case frameTooLarge(length: UInt32, limit: Int)
        case truncatedFrame(missing: Int)
        /// The first bytes are a TLS handshake record: the peer uses a shared secret and we do not.
        case tlsRecord
    }

    var reason: Reason

    var description: String {
        switch reason {
        case .emptyFrame:
            return "received a frame of length 0 (a frame holds at least its kind byte)"
        case .frameTooLarge(let length, let limit):
            return "received a frame of \(length) bytes, over the limit of \(limit) bytes"
        case .truncatedFrame(let missing):
            return "connection closed in the middle of a frame (\(missing) bytes missing)"
        case .tlsRecord:
            return "the peer started a TLS handshake: it requires a shared secret, and we have none"
        }
    }
}

/// Splits a byte stream into ``Frame``s: a 4-byte big-endian length, then that many bytes (kind byte + body).
///
/// The length is checked against the limit *before* anything is buffered or allocated for the frame, so a hostile
/// length costs nothing. The very first frame is the handshake and has its own, much smaller limit. Pure: the
/// connection's ``FrameReader`` feeds it the bytes read, the fuzzers feed it theirs.
struct FrameDecoder {
    private enum State {
        /// Waiting for the handshake frame.
        case awaitingHello
        /// Handshake frame seen; regular frames follow.
        case established
    }

    private var state: State = .awaitingHello
    /// Largest frame (kind + body) accepted after the handshake.
    let maxFrameSize: Int
    /// Largest frame accepted as the first frame.
    let maxHelloSize: Int

    init(maxFrameSize: Int, maxHelloSize: Int = WireFormat.maxHelloSize) {
        self.maxFrameSize = maxFrameSize
        self.maxHelloSize = min(maxHelloSize, maxFrameSize)
    }

    private var currentLimit: Int {
        switch state {
        case .awaitingHello: return maxHelloSize
        case .established: return maxFrameSize
        }
    }

    /// The error for `rest`, the bytes of an unfinished frame left when the stream ended: how many bytes it misses.
    static func truncation(of rest: ByteBuffer) -> FrameDecodingError {
        let missing: Int
        if rest.readableBytes >= WireFormat.lengthPrefixSize,
            let length = rest.getInteger(at: rest.readerIndex, as: UInt32.self)
        {
            missing = Int(length) + WireFormat.lengthPrefixSize - rest.readableBytes
        } else {
            missing = WireFormat.lengthPrefixSize - rest.readableBytes
        }
        return FrameDecodingError(reason: .truncatedFrame(missing: missing))
    }

    /// Decodes one frame if the buffer holds a whole one; pure, so it is also what the fuzzer drives.
    mutating func decodeFrame(from buffer: inout ByteBuffer) throws -> Frame? {
        guard let length = buffer.getInteger(at: buffer.readerIndex, as: UInt32.self) else { return nil }
        if case .awaitingHello = state, length >> 16 == 0x1603 {
            throw FrameDecodingError(reason: .tlsRecord)  // 0x16 0x03: a TLS handshake record, not a hello
        }
        guard length > 0 else { throw FrameDecodingError(reason: .emptyFrame) }
        let limit = currentLimit
        guard length <= limit else { throw FrameDecodingError(reason: .frameTooLarge(length: length, limit: limit)) }
        let total = WireFormat.lengthPrefixSize + Int(length)
        guard buffer.readableBytes >= total else { return nil }
        buffer.moveReaderIndex(forwardBy: WireFormat.lengthPrefixSize)
        guard let bytes = buffer.readSlice(length: Int(length)), let frame = Frame(kindAndBody: bytes) else {
            return nil  // unreachable: readableBytes and length > 0 were checked above
        }
        state = .established
        return frame
    }
}
