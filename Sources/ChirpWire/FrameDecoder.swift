import NIOCore

/// Errors raised by ``FrameDecoder`` when a peer sends something that is not a Chirp frame.
package struct FrameDecodingError: Error, Equatable, CustomStringConvertible {
    package enum Reason: Equatable {
        case emptyFrame
        case frameTooLarge(length: UInt32, limit: Int)
        case truncatedFrame(missing: Int)
        /// The first bytes are a TLS handshake record: the peer uses a shared secret and we do not.
        case tlsRecord
        /// The first frame announces more than a hello may hold: the other side is not a Chirp peer (an HTTP or SSH
        /// server, most likely: `firstBytes`, read as a length, are the start of what it sent).
        case notAChirpPeer(firstBytes: UInt32)
    }

    package var reason: Reason

    package var description: String {
        switch reason {
        case .emptyFrame:
            return "received a frame of length 0 (a frame holds at least its kind byte)"
        case .frameTooLarge(let length, let limit):
            return "received a frame of \(length) bytes, over the limit of \(limit) bytes"
        case .truncatedFrame(let missing):
            return "connection closed in the middle of a frame (\(missing) bytes missing)"
        case .tlsRecord:
            return "the peer started a TLS handshake: it requires a shared secret, and we have none"
        case .notAChirpPeer(let firstBytes):
            return "this is not a Chirp peer (\(Self.guess(firstBytes: firstBytes)))"
        }
    }

    /// What the other side seems to be, from the first 4 bytes it sent, as a clause for a message.
    package static func guess(firstBytes: UInt32) -> String {
        let bytes = withUnsafeBytes(of: firstBytes.bigEndian) { Array($0) }
        let text = String(decoding: bytes, as: UTF8.self)
        switch text {
        case "HTTP": return "it answered like an HTTP server"
        case "GET ", "HEAD", "POST", "PUT ", "DELE", "OPTI", "PATC", "CONN", "TRAC", "PRI ":
            return "it sent an HTTP request"
        case "SSH-": return "it answered like an SSH server"
        default:
            // A TLS record other than a handshake (an alert, most likely): a TLS server that did not understand.
            if [0x14, 0x15, 0x17].contains(bytes[0]) && bytes[1] == 0x03 { return "it answered with TLS" }
            return "what it sent is not a Chirp hello"
        }
    }
}

/// Splits a byte stream into ``Frame``s: a 4-byte big-endian length, then that many bytes (kind byte + body).
///
/// The length is checked against the limit *before* anything is buffered or allocated for the frame, so a hostile
/// length costs nothing. The very first frame is the handshake and has its own, much smaller limit. Pure: the
/// connection's ``FrameReader`` feeds it the bytes read, the fuzzers feed it theirs.
package struct FrameDecoder {
    private enum State {
        /// Waiting for the handshake frame.
        case awaitingHello
        /// Handshake frame seen; regular frames follow.
        case established
    }

    private var state: State = .awaitingHello
    /// Largest frame (kind + body) accepted after the handshake.
    package let maxFrameSize: Int
    /// Largest frame accepted as the first frame.
    package let maxHelloSize: Int

    package init(maxFrameSize: Int, maxHelloSize: Int = WireFormat.maxHelloSize) {
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
    package static func truncation(of rest: ByteBuffer) -> FrameDecodingError {
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
    package mutating func decodeFrame(from buffer: inout ByteBuffer) throws -> Frame? {
        guard let length = buffer.getInteger(at: buffer.readerIndex, as: UInt32.self) else { return nil }
        if case .awaitingHello = state, length >> 16 == 0x1603 {
            throw FrameDecodingError(reason: .tlsRecord)  // 0x16 0x03: a TLS handshake record, not a hello
        }
        guard length > 0 else { throw FrameDecodingError(reason: .emptyFrame) }
        let limit = currentLimit
        guard length <= limit else {
            // A hello is small: a first "length" past its limit is the start of something else, said as such.
            if case .awaitingHello = state { throw FrameDecodingError(reason: .notAChirpPeer(firstBytes: length)) }
            throw FrameDecodingError(reason: .frameTooLarge(length: length, limit: limit))
        }
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
