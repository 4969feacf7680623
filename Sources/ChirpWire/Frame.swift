import NIOCore

/// The kind byte that follows every frame's length prefix. See `Docs/Protocol.md`.
package enum FrameKind: UInt8, Sendable, CaseIterable {
    /// First frame on every connection, in both directions: a UTF-8 JSON ``Hello``.
    case hello = 0x01
    /// Sent instead of (or after) a hello when the connection is refused; body is a UTF-8 reason. The sender then closes.
    case refuse = 0x02
    /// A one-way message: flags, type name, payload.
    case message = 0x03
    /// A request: request id, flags, type name, payload.
    case request = 0x04
    /// The reply to a request: request id, status, flags, type name, payload.
    case response = 0x05
    /// Liveness probe; the receiver answers with `pong` echoing the body.
    case ping = 0x06
    /// The answer to `ping`, echoing its body.
    case pong = 0x07
    /// The sender is stopping on purpose: do not redial it until it is advertised again.
    case goodbye = 0x08
    /// A slice of a large message, request or response frame (``PartFrame``), sent only to a peer whose hello
    /// announced ``Hello/partsFeature``.
    case part = 0x09
    /// A message of the pairing exchange (`PairingMessage`: a kind byte, then 32 bytes), or the responder's "paired"
    /// (the single byte 4), on a connection whose hellos asked for pairing (``Hello/pairing``) and nowhere else.
    case pair = 0x0A
}

/// One decoded frame: its kind byte and its body (everything after the kind byte).
///
/// `kind` is kept as the raw byte so that unknown kinds from newer peers can be skipped, not treated as fatal.
///
/// Both live in one `ByteBuffer` (the kind byte, then the body), a slice of what was read: a frame is then no larger
/// than a `ByteBuffer`, so passing it down the channel pipeline (`NIOAny`) needs no box on the heap.
package struct Frame: Sendable, Equatable {
    /// The kind byte and the body; at least the kind byte is readable.
    private var bytes: ByteBuffer

    /// A frame from its parts (tests, and code that builds frames to inspect them); copies `body`.
    package init(kind: UInt8, body: ByteBuffer) {
        var bytes = ByteBuffer()
        bytes.reserveCapacity(1 + body.readableBytes)
        bytes.writeInteger(kind)
        bytes.writeImmutableBuffer(body)
        self.bytes = bytes
    }

    package init(_ kind: FrameKind, body: ByteBuffer) {
        self.init(kind: kind.rawValue, body: body)
    }

    /// A frame whose kind byte and body are `bytes`, as read; `nil` when not even the kind byte is there.
    package init?(kindAndBody bytes: ByteBuffer) {
        guard bytes.readableBytes >= WireFormat.kindSize else { return nil }
        self.bytes = bytes
    }

    /// The kind byte.
    package var kind: UInt8 { bytes.getInteger(at: bytes.readerIndex, as: UInt8.self) ?? 0 }

    /// Everything after the kind byte (a slice: no copy).
    package var body: ByteBuffer {
        bytes.getSlice(at: bytes.readerIndex + WireFormat.kindSize, length: bytes.readableBytes - WireFormat.kindSize)
            ?? ByteBuffer()
    }

    /// The known kind, or `nil` for a kind this version does not know.
    package var knownKind: FrameKind? { FrameKind(rawValue: kind) }
}

/// Sizes fixed by the wire format.
package enum WireFormat {
    /// Bytes of the big-endian length prefix.
    package static let lengthPrefixSize = 4
    /// Bytes of the kind byte.
    package static let kindSize = 1
    /// The longest type name a frame may carry.
    package static let maxTypeNameLength = 1024
    /// The largest hello frame accepted before the handshake completes.
    package static let maxHelloSize = 16 * 1024
}
