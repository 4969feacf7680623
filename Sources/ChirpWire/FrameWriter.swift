import NIOCore

/// Bits of the flags byte that precedes a message's type name.
package struct PayloadFlags: OptionSet, Sendable, Hashable {
    package let rawValue: UInt8

    package init(rawValue: UInt8) { self.rawValue = rawValue }

    /// The payload is raw bytes (a `Data` value), not the output of the message coder.
    package static let binary = PayloadFlags(rawValue: 0x01)
}

/// Status byte of a response frame.
package enum ResponseStatus: UInt8, Sendable {
    /// The responder returned a value; the payload is that value.
    case ok = 0
    /// The responder threw; the payload is the UTF-8 error message.
    case failed = 1
    /// No responder is registered for the request's type; the payload is a UTF-8 explanation.
    case noResponder = 2
    /// The request's payload could not be decoded; the payload is a UTF-8 explanation.
    case undecodable = 3
}

/// Writes frames into a `ByteBuffer`: the length prefix is reserved first and patched at the end, so a frame is built in
/// one pass with no intermediate buffer.
package enum FrameWriter {
    /// Appends one frame of `kind` whose body is written by `body`.
    @inlinable
    package static func write(_ kind: FrameKind, into buffer: inout ByteBuffer, body: (inout ByteBuffer) throws -> Void)
        rethrows
    {
        let start = buffer.writerIndex
        buffer.writeInteger(UInt32(0))
        buffer.writeInteger(kind.rawValue)
        try body(&buffer)
        let length = buffer.writerIndex - start - WireFormat.lengthPrefixSize
        buffer.setInteger(UInt32(truncatingIfNeeded: length), at: start)
    }

    /// Appends the message header: flags, type-name length, type name.
    @inlinable
    package static func writeMessageHeader(typeName: String, flags: PayloadFlags, into buffer: inout ByteBuffer) {
        buffer.writeInteger(flags.rawValue)
        let lengthIndex = buffer.writerIndex
        buffer.writeInteger(UInt16(0))
        let written = buffer.writeString(typeName)
        buffer.setInteger(UInt16(truncatingIfNeeded: written), at: lengthIndex)
    }

    /// A frame with a plain byte body (hello, refuse, ping, pong, goodbye).
    package static func frame(_ kind: FrameKind, body: ByteBuffer, allocator: ByteBufferAllocator) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: WireFormat.lengthPrefixSize + WireFormat.kindSize + body.readableBytes)
        write(kind, into: &buffer) { buffer in
            var body = body
            buffer.writeBuffer(&body)
        }
        return buffer
    }

    /// A frame whose body is UTF-8 text.
    package static func frame(_ kind: FrameKind, text: String, allocator: ByteBufferAllocator) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: 8 + text.utf8.count)
        write(kind, into: &buffer) { $0.writeString(text) }
        return buffer
    }
}

/// A parsed message header and its payload, the common part of message, request and response frames.
package struct MessageBody: Sendable, Equatable {
    package var typeName: String
    package var flags: PayloadFlags
    package var payload: ByteBuffer
}

/// A parsed request frame body.
package struct RequestBody: Sendable, Equatable {
    package var requestID: UInt64
    package var message: MessageBody
}

/// A parsed response frame body.
package struct ResponseBody: Sendable, Equatable {
    package var requestID: UInt64
    package var status: ResponseStatus
    package var message: MessageBody
}

/// The body of a frame did not have the shape its kind requires.
struct MalformedFrameError: Error, Equatable, CustomStringConvertible {
    var kind: FrameKind
    var problem: String
    var description: String { "malformed \(kind) frame: \(problem)" }
}

/// Parsing of frame bodies; pure functions over `ByteBuffer`, used by the connection handlers and by the fuzzer.
///
/// Each takes the connection's ``TypeNameCache``: a type name the connection received lately is matched on its bytes,
/// with no string made. The forms without it use a cache of their own (tests, one-off parses).
package enum FrameParser {
    package static func message(_ body: ByteBuffer, kind: FrameKind = .message) throws -> MessageBody {
        var names = TypeNameCache()
        return try message(body, kind: kind, names: &names)
    }

    package static func message(_ body: ByteBuffer, kind: FrameKind = .message, names: inout TypeNameCache) throws
        -> MessageBody
    {
        var body = body
        return try readMessage(&body, kind: kind, names: &names)
    }

    package static func request(_ body: ByteBuffer) throws -> RequestBody {
        var names = TypeNameCache()
        return try request(body, names: &names)
    }

    package static func request(_ body: ByteBuffer, names: inout TypeNameCache) throws -> RequestBody {
        var body = body
        guard let id = body.readInteger(as: UInt64.self) else {
            throw MalformedFrameError(kind: .request, problem: "shorter than its 8-byte request id")
        }
        return RequestBody(requestID: id, message: try readMessage(&body, kind: .request, names: &names))
    }

    package static func response(_ body: ByteBuffer) throws -> ResponseBody {
        var names = TypeNameCache()
        return try response(body, names: &names)
    }

    package static func response(_ body: ByteBuffer, names: inout TypeNameCache) throws -> ResponseBody {
        var body = body
        guard let id = body.readInteger(as: UInt64.self), let rawStatus = body.readInteger(as: UInt8.self) else {
            throw MalformedFrameError(kind: .response, problem: "shorter than its request id and status")
        }
        guard let status = ResponseStatus(rawValue: rawStatus) else {
            throw MalformedFrameError(kind: .response, problem: "unknown status \(rawStatus)")
        }
        return ResponseBody(
            requestID: id, status: status, message: try readMessage(&body, kind: .response, names: &names))
    }

    private static func readMessage(_ body: inout ByteBuffer, kind: FrameKind, names: inout TypeNameCache) throws
        -> MessageBody
    {
        guard let rawFlags = body.readInteger(as: UInt8.self), let nameLength = body.readInteger(as: UInt16.self) else {
            throw MalformedFrameError(kind: kind, problem: "shorter than its 3-byte message header")
        }
        guard nameLength > 0, Int(nameLength) <= WireFormat.maxTypeNameLength else {
            throw MalformedFrameError(
                kind: kind, problem: "type name length \(nameLength) is not within 1...\(WireFormat.maxTypeNameLength)")
        }
        guard let nameBytes = body.readSlice(length: Int(nameLength)) else {
            throw MalformedFrameError(kind: kind, problem: "type name runs past the end of the frame")
        }
        guard let typeName = names.name(of: nameBytes) else {
            throw MalformedFrameError(kind: kind, problem: "type name is not valid UTF-8")
        }
        return MessageBody(typeName: typeName, flags: PayloadFlags(rawValue: rawFlags), payload: body)
    }
}
