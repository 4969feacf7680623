import Foundation
import Logging
import NIOCore

/// The binary form of a record, used both in batches on the wire and in spool files (see `Docs/Logging.md`).
///
/// An entry is a big-endian `u32` length followed by that many bytes:
///
///     u64 sequence | i64 time (ns since 1970) | u8 level (0 trace ... 6 critical) | u8 flags (bit 0: HTTP)
///     str label | str message | str source | str file | str function | u64 line | metadata
///     [exchange, when flags bit 0]
///
/// `str` is a `u32` byte count and UTF-8; `metadata` is a `u32` count of `str key, value` pairs; a `value` is a tag
/// byte (0 string: `str`; 1 array: `u32` count, values; 2 dictionary: `u32` count, `str key, value` pairs).
/// Encoding caps strings and nesting so that one record can never grow a batch without bound; decoding checks every
/// length against the bytes left and refuses deeper nesting than ``maximumDepth``.
enum RecordCoding {
    /// Longest message kept (bytes); longer ones end with `…`.
    static let maximumMessageBytes = 64 * 1024
    /// Longest label, source, file, function, metadata key (bytes).
    static let maximumNameBytes = 1024
    /// Longest metadata string value (bytes).
    static let maximumValueBytes = 16 * 1024
    /// Deepest metadata nesting written or accepted.
    static let maximumDepth = 8
    /// Most metadata entries written per level.
    static let maximumEntries = 256

    /// Static facts about the source, which records carry on the viewer side but not on the wire.
    struct Origin: Sendable {
        var appName: String
        var host: String
        var processID: Int32
    }

    // MARK: Encoding

    /// Appends one entry for `record` (metadata merged, source derived here, on the sending side).
    static func writeEntry(_ record: PendingRecord, into buffer: inout ByteBuffer) {
        let event = record.event
        writeEntry(
            sequence: record.sequence, timeNanos: record.timeNanos, level: event.level, label: record.label,
            message: event.message.description, source: event.source, file: event.file, function: event.function,
            line: event.line, metadata: record.mergedMetadata, http: record.http?.exchange, into: &buffer)
    }

    /// Appends one entry for a ``LogRecord``.
    static func writeEntry(_ record: LogRecord, into buffer: inout ByteBuffer) {
        writeEntry(
            sequence: record.sequence, timeNanos: Int64((record.timestamp.timeIntervalSince1970 * 1e9).rounded()),
            level: record.level, label: record.label, message: record.message, source: record.source,
            file: record.file, function: record.function, line: record.line, metadata: record.metadata,
            http: record.http, into: &buffer)
    }

    static func writeEntry(
        sequence: UInt64, timeNanos: Int64, level: Logger.Level, label: String, message: String, source: String,
        file: String, function: String, line: UInt, metadata: Logger.Metadata, http: HTTPExchange?,
        into buffer: inout ByteBuffer
    ) {
        let lengthIndex = buffer.writerIndex
        buffer.writeInteger(UInt32(0))
        buffer.writeInteger(sequence)
        buffer.writeInteger(timeNanos)
        buffer.writeInteger(level.code)
        buffer.writeInteger(UInt8(http == nil ? 0 : 1))
        writeString(label, limit: maximumNameBytes, into: &buffer)
        writeString(message, limit: maximumMessageBytes, into: &buffer)
        writeString(source, limit: maximumNameBytes, into: &buffer)
        writeString(file, limit: maximumNameBytes, into: &buffer)
        writeString(function, limit: maximumNameBytes, into: &buffer)
        buffer.writeInteger(UInt64(line))
        writeMetadata(metadata, depth: 0, into: &buffer)
        if let http { writeExchange(http, into: &buffer) }
        buffer.setInteger(UInt32(truncatingIfNeeded: buffer.writerIndex - lengthIndex - 4), at: lengthIndex)
    }

    @inline(__always)
    static func writeString(_ string: String, limit: Int, into buffer: inout ByteBuffer) {
        let lengthIndex = buffer.writerIndex
        buffer.writeInteger(UInt32(0))
        var written = buffer.writeString(string)
        if written > limit {
            // Cut at a character boundary below the limit and mark the cut.
            buffer.moveWriterIndex(to: lengthIndex + 4)
            let prefix = Array(string.utf8.prefix(max(0, limit - 3)))
            var end = prefix.count
            while end > 0 && prefix[end - 1] & 0xC0 == 0x80 { end -= 1 }
            if end > 0 && prefix[end - 1] >= 0xC0 { end -= 1 }
            written = buffer.writeBytes(prefix[0..<end]) + buffer.writeString("…")
        }
        buffer.setInteger(UInt32(written), at: lengthIndex)
    }

    static func writeBytes(_ data: Data, into buffer: inout ByteBuffer) {
        buffer.writeInteger(UInt32(data.count))
        buffer.writeBytes(data)
    }

    static func writeMetadata(_ metadata: Logger.Metadata, depth: Int, into buffer: inout ByteBuffer) {
        let entries = metadata.count <= maximumEntries ? Array(metadata) : Array(metadata.prefix(maximumEntries))
        buffer.writeInteger(UInt32(entries.count))
        for (key, value) in entries {
            writeString(key, limit: maximumNameBytes, into: &buffer)
            writeValue(value, depth: depth + 1, into: &buffer)
        }
    }

    static func writeValue(_ value: Logger.MetadataValue, depth: Int, into buffer: inout ByteBuffer) {
        switch value {
        case .string(let string):
            buffer.writeInteger(UInt8(0))
            writeString(string, limit: maximumValueBytes, into: &buffer)
        case .stringConvertible(let convertible):
            buffer.writeInteger(UInt8(0))
            writeString(convertible.description, limit: maximumValueBytes, into: &buffer)
        case .array(let values) where depth < maximumDepth:
            buffer.writeInteger(UInt8(1))
            let kept = values.prefix(maximumEntries)
            buffer.writeInteger(UInt32(kept.count))
            for value in kept { writeValue(value, depth: depth + 1, into: &buffer) }
        case .dictionary(let dictionary) where depth < maximumDepth:
            buffer.writeInteger(UInt8(2))
            writeMetadata(dictionary, depth: depth, into: &buffer)
        case .array, .dictionary:
            buffer.writeInteger(UInt8(0))
            writeString("…", limit: maximumValueBytes, into: &buffer)
        }
    }

    static func writeExchange(_ exchange: HTTPExchange, into buffer: inout ByteBuffer) {
        writeString(exchange.method, limit: maximumNameBytes, into: &buffer)
        writeString(exchange.url, limit: maximumValueBytes, into: &buffer)
        writeHeaders(exchange.requestHeaders, into: &buffer)
        writeBody(exchange.requestBody, into: &buffer)
        buffer.writeInteger(Int32(exchange.status ?? -1))
        writeHeaders(exchange.responseHeaders, into: &buffer)
        writeBody(exchange.responseBody, into: &buffer)
        buffer.writeInteger(Int64((exchange.startTime.timeIntervalSince1970 * 1e9).rounded()))
        buffer.writeInteger(Int64((exchange.duration * 1e9).rounded()))
        if let error = exchange.error {
            buffer.writeInteger(UInt8(1))
            writeString(error, limit: maximumValueBytes, into: &buffer)
        } else {
            buffer.writeInteger(UInt8(0))
        }
    }

    static func writeHeaders(_ headers: [HTTPHeader], into buffer: inout ByteBuffer) {
        let kept = headers.prefix(maximumEntries)
        buffer.writeInteger(UInt32(kept.count))
        for header in kept {
            writeString(header.name, limit: maximumNameBytes, into: &buffer)
            writeString(header.value, limit: maximumValueBytes, into: &buffer)
        }
    }

    static func writeBody(_ body: HTTPBody?, into buffer: inout ByteBuffer) {
        guard let body else {
            buffer.writeInteger(UInt8(0))
            return
        }
        buffer.writeInteger(UInt8(1))
        buffer.writeInteger(UInt64(body.totalBytes))
        writeBytes(body.data, into: &buffer)
    }

    /// The bytes of `buffer` between two absolute indices (`getSlice` refuses indices before the reader index).
    static func bytes(of buffer: ByteBuffer, from start: Int, to end: Int) -> ByteBuffer {
        var copy = buffer
        copy.moveReaderIndex(to: start)
        return copy.getSlice(at: start, length: max(0, end - start)) ?? ByteBuffer()
    }

    // MARK: Decoding

    /// Something in an entry is not what the format says.
    struct DecodingError: Error, CustomStringConvertible {
        var description: String
    }

    /// The sequence number of the entry at the reader index, without consuming it; `nil` if incomplete.
    static func peekEntry(_ buffer: ByteBuffer) -> (sequence: UInt64, length: Int)? {
        guard let length = buffer.getInteger(at: buffer.readerIndex, as: UInt32.self),
            buffer.readableBytes >= 4 + Int(length), length >= 8,
            let sequence = buffer.getInteger(at: buffer.readerIndex + 4, as: UInt64.self)
        else { return nil }
        return (sequence, 4 + Int(length))
    }

    /// Reads one entry.
    static func readEntry(_ buffer: inout ByteBuffer, origin: Origin) throws -> LogRecord {
        guard let length = buffer.readInteger(as: UInt32.self), var body = buffer.readSlice(length: Int(length)) else {
            throw DecodingError(description: "entry runs past the end of the batch")
        }
        let record = try readBody(&body, origin: origin)
        if body.readableBytes != 0 {
            throw DecodingError(description: "\(body.readableBytes) stray bytes after an entry")
        }
        return record
    }

    private static func readBody(_ body: inout ByteBuffer, origin: Origin) throws -> LogRecord {
        let sequence: UInt64 = try integer(&body)
        let time: Int64 = try integer(&body)
        let levelCode: UInt8 = try integer(&body)
        guard let level = Logger.Level(code: levelCode) else {
            throw DecodingError(description: "unknown level \(levelCode)")
        }
        let flags: UInt8 = try integer(&body)
        let label = try string(&body)
        let message = try string(&body)
        let source = try string(&body)
        let file = try string(&body)
        let function = try string(&body)
        let line: UInt64 = try integer(&body)
        let metadata = try readMetadata(&body, depth: 0)
        let http = flags & 1 != 0 ? try readExchange(&body) : nil
        return LogRecord(
            sequence: sequence, timestamp: Date(timeIntervalSince1970: Double(time) / 1e9), level: level, label: label,
            message: message, metadata: metadata, source: source, file: file, function: function,
            line: UInt(truncatingIfNeeded: line), appName: origin.appName, host: origin.host,
            processID: origin.processID, http: http)
    }

    @inline(__always)
    static func integer<T: FixedWidthInteger>(_ buffer: inout ByteBuffer) throws -> T {
        guard let value = buffer.readInteger(as: T.self) else { throw DecodingError(description: "truncated entry") }
        return value
    }

    static func string(_ buffer: inout ByteBuffer) throws -> String {
        let length: UInt32 = try integer(&buffer)
        guard Int(length) <= buffer.readableBytes, let string = buffer.readString(length: Int(length)) else {
            throw DecodingError(description: "a string runs past the end of its entry")
        }
        return string
    }

    static func bytes(_ buffer: inout ByteBuffer) throws -> Data {
        let length: UInt32 = try integer(&buffer)
        guard Int(length) <= buffer.readableBytes, let bytes = buffer.readBytes(length: Int(length)) else {
            throw DecodingError(description: "a body runs past the end of its entry")
        }
        return Data(bytes)
    }

    /// A count that cannot be satisfied by the bytes left (each element takes at least `minimumSize`) is refused
    /// before anything is allocated for it.
    static func count(_ buffer: inout ByteBuffer, minimumSize: Int) throws -> Int {
        let count: UInt32 = try integer(&buffer)
        guard Int(count) * minimumSize <= buffer.readableBytes else {
            throw DecodingError(description: "a count of \(count) is larger than the entry")
        }
        return Int(count)
    }

    static func readMetadata(_ buffer: inout ByteBuffer, depth: Int) throws -> Logger.Metadata {
        guard depth <= maximumDepth else { throw DecodingError(description: "metadata nested too deeply") }
        let count = try count(&buffer, minimumSize: 5)
        var metadata: Logger.Metadata = [:]
        metadata.reserveCapacity(count)
        for _ in 0..<count {
            let key = try string(&buffer)
            metadata[key] = try readValue(&buffer, depth: depth + 1)
        }
        return metadata
    }

    static func readValue(_ buffer: inout ByteBuffer, depth: Int) throws -> Logger.MetadataValue {
        guard depth <= maximumDepth + 1 else { throw DecodingError(description: "metadata nested too deeply") }
        let tag: UInt8 = try integer(&buffer)
        switch tag {
        case 0:
            return .string(try string(&buffer))
        case 1:
            let count = try count(&buffer, minimumSize: 1)
            var values: [Logger.MetadataValue] = []
            values.reserveCapacity(count)
            for _ in 0..<count { values.append(try readValue(&buffer, depth: depth + 1)) }
            return .array(values)
        case 2:
            return .dictionary(try readMetadata(&buffer, depth: depth))
        default:
            throw DecodingError(description: "unknown metadata tag \(tag)")
        }
    }

    static func readExchange(_ buffer: inout ByteBuffer) throws -> HTTPExchange {
        let method = try string(&buffer)
        let url = try string(&buffer)
        let requestHeaders = try readHeaders(&buffer)
        let requestBody = try readBody(&buffer)
        let status: Int32 = try integer(&buffer)
        let responseHeaders = try readHeaders(&buffer)
        let responseBody = try readBody(&buffer)
        let start: Int64 = try integer(&buffer)
        let duration: Int64 = try integer(&buffer)
        let hasError: UInt8 = try integer(&buffer)
        let error = hasError != 0 ? try string(&buffer) : nil
        return HTTPExchange(
            method: method, url: url, requestHeaders: requestHeaders, requestBody: requestBody,
            status: status < 0 ? nil : Int(status), responseHeaders: responseHeaders, responseBody: responseBody,
            startTime: Date(timeIntervalSince1970: Double(start) / 1e9), duration: Double(duration) / 1e9, error: error)
    }

    static func readHeaders(_ buffer: inout ByteBuffer) throws -> [HTTPHeader] {
        let count = try count(&buffer, minimumSize: 8)
        var headers: [HTTPHeader] = []
        headers.reserveCapacity(count)
        for _ in 0..<count { headers.append(HTTPHeader(name: try string(&buffer), value: try string(&buffer))) }
        return headers
    }

    static func readBody(_ buffer: inout ByteBuffer) throws -> HTTPBody? {
        let present: UInt8 = try integer(&buffer)
        guard present != 0 else { return nil }
        let total: UInt64 = try integer(&buffer)
        let data = try bytes(&buffer)
        return HTTPBody(data, totalBytes: Int(clamping: total))
    }
}
