import ChirpSupport
import ChirpWire
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOFoundationCompat

/// Type name -> the handlers and the responder for that type. Registration can happen at any time, from any thread;
/// lookups take a lock briefly and run handlers outside it.
final class Router: Sendable {
    /// One registered receive handler: decodes the payload and calls the user's closure.
    struct Handler: Sendable {
        let token: UInt64
        let invoke: @Sendable (MessageBody, Delivery, any MessageCoder) throws -> Void
    }

    /// Who delivered a message: the sender, and the connection it came on, whose reading a full consumer can pause
    /// (``MessageSequence``).
    struct Delivery: Sendable {
        var peer: Peer
        /// Identifies the connection (the same for every message it delivers).
        var connection: ObjectIdentifier
        /// The connection's read gate.
        var gate: (any ReadPause)?
    }

    /// What an async responder produces: the reply's type name, and the payload's encoding, which runs once,
    /// straight into the response frame (``PayloadCoding/writeResponse(id:status:typeName:into:writePayload:)``).
    struct Reply: Sendable {
        var typeName: String
        /// Appends the payload and returns its flags.
        var writePayload: @Sendable (inout ByteBuffer) throws -> PayloadFlags
    }

    /// A registered responder.
    enum Responder: Sendable {
        /// Runs on the event loop, inside the writing of the response frame: decodes the request, calls the
        /// handler and appends its reply's payload to the frame (whose header names `replyTypeName`), returning the
        /// payload's flags. Nothing is allocated to carry the reply from the handler to the frame.
        case sync(
            replyTypeName: String,
            @Sendable (MessageBody, Peer, any MessageCoder, inout ByteBuffer) throws -> PayloadFlags)
        /// Runs in a task of the ``ResponderPool``; its ``Reply`` is encoded when the task ends.
        case async(@Sendable (MessageBody, Peer, any MessageCoder) async throws -> Reply)
    }

    /// The Swift type registered under a wire name, and how many registrations hold it.
    private struct Owner {
        var type: ObjectIdentifier
        var typeDescription: String
        var handlers = 0
        var hasResponder = false
    }

    private struct Tables {
        var handlers: [String: [Handler]] = [:]
        var responders: [String: Responder] = [:]
        /// The one Swift type each wire name with a handler or a responder belongs to.
        var owners: [String: Owner] = [:]
        /// Handlers that see every message, whatever its type (`receive(RawMessage.self)`).
        var wildcard: [Handler] = []
        var nextToken: UInt64 = 1
    }

    private let tables = NIOLockedValueBox(Tables())

    /// Adds a handler for the messages of `typeName`, decoded as `type`.
    /// - Throws: ``ChirpError/Code/typeNameConflict`` when another Swift type holds `typeName`.
    @discardableResult
    func addHandler(
        for typeName: String, type: Any.Type,
        _ invoke: @escaping @Sendable (MessageBody, Delivery, any MessageCoder) throws -> Void
    ) throws -> UInt64 {
        try tables.withLockedValue { tables in
            try Self.claim(typeName, for: type, in: &tables) { $0.handlers += 1 }
            let token = tables.nextToken
            tables.nextToken += 1
            tables.handlers[typeName, default: []].append(Handler(token: token, invoke: invoke))
            return token
        }
    }

    /// Records that `type` is registered under `typeName` (`change` counts the registration), or throws when another
    /// Swift type is: the messages of one wire name decode as one type.
    private static func claim(
        _ typeName: String, for type: Any.Type, in tables: inout Tables, _ change: (inout Owner) -> Void
    ) throws {
        var owner =
            tables.owners[typeName]
            ?? Owner(type: ObjectIdentifier(type), typeDescription: String(reflecting: type))
        guard owner.type == ObjectIdentifier(type) else {
            throw ChirpError.typeNameConflict(
                typeName, registered: owner.typeDescription, refused: String(reflecting: type))
        }
        change(&owner)
        tables.owners[typeName] = owner
    }

    @discardableResult
    func addWildcardHandler(_ invoke: @escaping @Sendable (MessageBody, Delivery, any MessageCoder) throws -> Void)
        -> UInt64
    {
        tables.withLockedValue { tables in
            let token = tables.nextToken
            tables.nextToken += 1
            tables.wildcard.append(Handler(token: token, invoke: invoke))
            return token
        }
    }

    func removeHandler(token: UInt64) {
        tables.withLockedValue { tables in
            tables.wildcard.removeAll { $0.token == token }
            for (name, list) in tables.handlers {
                let kept = list.filter { $0.token != token }
                guard kept.count < list.count else { continue }
                tables.handlers[name] = kept.isEmpty ? nil : kept
                if var owner = tables.owners[name] {
                    owner.handlers -= 1
                    tables.owners[name] = owner.handlers == 0 && !owner.hasResponder ? nil : owner
                }
            }
        }
    }

    /// Sets the responder for the requests of `typeName`, decoded as `type` (replacing the one there was).
    /// - Throws: ``ChirpError/Code/typeNameConflict`` when another Swift type holds `typeName`.
    func setResponder(for typeName: String, type: Any.Type, _ responder: Responder) throws {
        try tables.withLockedValue { tables in
            try Self.claim(typeName, for: type, in: &tables) { $0.hasResponder = true }
            tables.responders[typeName] = responder
        }
    }

    /// The handlers for `typeName` in registration order, then the wildcard handlers.
    func handlers(for typeName: String) -> [Handler] {
        tables.withLockedValue { tables in
            guard let typed = tables.handlers[typeName] else { return tables.wildcard }
            return tables.wildcard.isEmpty ? typed : typed + tables.wildcard
        }
    }

    func responder(for typeName: String) -> Responder? {
        tables.withLockedValue { $0.responders[typeName] }
    }

    /// Every type name with a handler or a responder (for the warning about messages nobody handles).
    func registeredTypeNames() -> Set<String> {
        tables.withLockedValue { Set($0.handlers.keys).union($0.responders.keys) }
    }
}

/// Encoding and decoding of payloads, with the binary fast path for `Data`.
enum PayloadCoding {
    /// Writes `value`'s payload to `buffer` and returns the flags that describe it.
    @inlinable
    static func encode<T: Encodable>(_ value: T, coder: any MessageCoder, into buffer: inout ByteBuffer) throws
        -> PayloadFlags
    {
        if T.self == Data.self, let data = value as? Data {  // a metatype comparison first: a failing cast costs more
            buffer.writeBytes(data)
            return .binary
        }
        try coder.encode(value, into: &buffer)
        return []
    }

    static func decode<T: Decodable>(_ type: T.Type, from message: MessageBody, coder: any MessageCoder) throws -> T {
        if message.flags.contains(.binary) { return try decodeBinary(type, from: message) }
        return try coder.decode(type, from: message.payload)
    }

    /// A binary payload as `Data`. A function of its own: the cast needs the metadata of `T?`, which Swift looks up
    /// at run time on entry to the function that casts, and the JSON path should not pay for it.
    @inline(never)
    private static func decodeBinary<T: Decodable>(_ type: T.Type, from message: MessageBody) throws -> T {
        // Large payloads share the received bytes instead of copying them (NIO's `.automatic`: copies up to 256 KiB).
        let payload = message.payload
        let bytes =
            payload.getData(at: payload.readerIndex, length: payload.readableBytes, byteTransferStrategy: .automatic)
            ?? Data()
        if let data = bytes as? T { return data }
        throw PayloadError.binaryPayloadForNonData(typeName: message.typeName)
    }

    /// A complete message frame (`requestID == nil`) or request frame whose payload `writePayload` appends.
    @inlinable
    static func frame(
        requestID: UInt64? = nil, typeName: String, allocator: ByteBufferAllocator, limit: Int,
        writePayload: (inout ByteBuffer) throws -> PayloadFlags
    ) throws -> ByteBuffer {
        var buffer = allocator.buffer(capacity: 128)
        try writeFrame(
            requestID: requestID, typeName: typeName, limit: limit, into: &buffer, writePayload: writePayload)
        return buffer
    }

    /// Appends a complete message or request frame to `buffer` (in place: a buffer nothing else holds is written
    /// without a copy).
    @inlinable
    static func writeFrame(
        requestID: UInt64? = nil, typeName: String, limit: Int, into buffer: inout ByteBuffer,
        writePayload: (inout ByteBuffer) throws -> PayloadFlags
    ) throws {
        let start = buffer.writerIndex
        do {
            try FrameWriter.write(requestID == nil ? .message : .request, into: &buffer) { buffer in
                if let requestID { buffer.writeInteger(requestID) }
                let flagsIndex = buffer.writerIndex
                FrameWriter.writeMessageHeader(typeName: typeName, flags: [], into: &buffer)
                let flags = try writePayload(&buffer)
                if !flags.isEmpty { buffer.setInteger(flags.rawValue, at: flagsIndex) }
            }
        } catch {
            throw ChirpError.encodingFailed(type: typeName, reason: "\(error)", cause: error)
        }
        let size = buffer.writerIndex - start - WireFormat.lengthPrefixSize
        if size > limit { throw ChirpError.messageTooLarge(type: typeName, size: size, limit: limit) }
    }

    /// A complete message or request frame for `value`.
    @inlinable
    static func frame<T: Encodable>(
        _ value: T, requestID: UInt64? = nil, typeName: String, coder: any MessageCoder, allocator: ByteBufferAllocator,
        limit: Int
    ) throws -> ByteBuffer {
        try frame(requestID: requestID, typeName: typeName, allocator: allocator, limit: limit) { buffer in
            try encode(value, coder: coder, into: &buffer)
        }
    }

    /// A complete message or request frame for a ``RawMessage``.
    static func frame(_ raw: RawMessage, requestID: UInt64? = nil, allocator: ByteBufferAllocator, limit: Int) throws
        -> ByteBuffer
    {
        let typeName = try MessageTypeName.checked(raw.typeName, of: nil)
        return try frame(requestID: requestID, typeName: typeName, allocator: allocator, limit: limit) { buffer in
            buffer.writeBytes(raw.payload)
            return raw.isBinary ? .binary : []
        }
    }

    /// Appends a complete response frame to `buffer` whose payload `writePayload` appends, straight into it. Throws
    /// what `writePayload` throws (having written part of the frame: the caller takes it back).
    static func writeResponse(
        id: UInt64, status: ResponseStatus, typeName: String, into buffer: inout ByteBuffer,
        writePayload: (inout ByteBuffer) throws -> PayloadFlags
    ) throws {
        try FrameWriter.write(.response, into: &buffer) { buffer in
            buffer.writeInteger(id)
            buffer.writeInteger(status.rawValue)
            let flagsIndex = buffer.writerIndex
            FrameWriter.writeMessageHeader(typeName: typeName, flags: [], into: &buffer)
            let flags = try writePayload(&buffer)
            if !flags.isEmpty { buffer.setInteger(flags.rawValue, at: flagsIndex) }
        }
    }

    /// A failure response frame carrying `message` as text.
    static func failureFrame(
        id: UInt64, status: ResponseStatus, typeName: String, message: String, allocator: ByteBufferAllocator
    ) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: 32 + typeName.utf8.count + message.utf8.count)
        writeFailure(id: id, status: status, typeName: typeName, message: message, into: &buffer)
        return buffer
    }

    /// Appends a failure response frame carrying `message` as text to `buffer`.
    static func writeFailure(
        id: UInt64, status: ResponseStatus, typeName: String, message: String, into buffer: inout ByteBuffer
    ) {
        FrameWriter.write(.response, into: &buffer) { buffer in
            buffer.writeInteger(id)
            buffer.writeInteger(status.rawValue)
            FrameWriter.writeMessageHeader(typeName: typeName, flags: [], into: &buffer)
            buffer.writeString(message)
        }
    }
}

extension PayloadCoding {
    /// `error` (a ``ChirpError/Code/messageTooLarge``), explained when `value` holds `Data`, which JSON writes as
    /// base64. For the error path only: it looks through the value's stored properties, a few levels deep.
    @inline(never)
    static func explained<T>(_ error: ChirpError, for value: T) -> ChirpError {
        T.self != Data.self && holdsData(value) ? error.explainingData() : error
    }

    /// Whether `value` is or holds `Data` in a stored property (of an optional, a collection, a nested value).
    private static func holdsData(_ value: Any, depth: Int = 4) -> Bool {
        if value is Data { return true }
        guard depth > 0 else { return false }
        return Mirror(reflecting: value).children.prefix(64).contains { holdsData($0.value, depth: depth - 1) }
    }
}

enum PayloadError: Error, CustomStringConvertible {
    case binaryPayloadForNonData(typeName: String)
    var description: String {
        switch self {
        case .binaryPayloadForNonData(let name):
            return "\(name) arrived as raw bytes, but the receiving type is not Data"
        }
    }
}
