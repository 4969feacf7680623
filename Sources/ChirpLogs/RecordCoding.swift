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
    //
    // Entries are written into a `[UInt8]` and reach a `ByteBuffer` (or a batch's `Data`) in one copy: every call of
    // a `ByteBuffer` write method checks exclusive access to its storage at run time, and a record is about twenty
    // writes, which had been a quarter of the log pump's time.

    /// Appends one entry for a ``LogRecord``.
    static func writeEntry(_ record: LogRecord, into bytes: inout [UInt8]) {
        writeEntry(
            sequence: record.sequence, timeNanos: nanoseconds(record.timestamp.timeIntervalSince1970),
            level: record.level, label: record.label, message: record.message, source: record.source,
            file: record.file, function: record.function, line: record.line, metadata: record.metadata,
            http: record.http, into: &bytes)
    }

    /// Appends one entry for a ``LogRecord`` to `buffer`.
    static func writeEntry(_ record: LogRecord, into buffer: inout ByteBuffer) {
        var bytes: [UInt8] = []
        writeEntry(record, into: &bytes)
        buffer.writeBytes(bytes)
    }

    static func writeEntry(
        sequence: UInt64, timeNanos: Int64, level: Logger.Level, label: String, message: String, source: String,
        file: String, function: String, line: UInt, metadata: Logger.Metadata, http: HTTPExchange?,
        into bytes: inout [UInt8]
    ) {
        let lengthIndex = bytes.count
        writeInteger(UInt32(0), into: &bytes)
        writeInteger(sequence, into: &bytes)
        writeInteger(timeNanos, into: &bytes)
        bytes.append(level.code)
        bytes.append(http == nil ? 0 : 1)
        writeString(label, limit: maximumNameBytes, into: &bytes)
        writeString(message, limit: maximumMessageBytes, into: &bytes)
        writeString(source, limit: maximumNameBytes, into: &bytes)
        writeString(file, limit: maximumNameBytes, into: &bytes)
        writeString(function, limit: maximumNameBytes, into: &bytes)
        writeInteger(UInt64(line), into: &bytes)
        writeMetadata(metadata, depth: 0, into: &bytes)
        if let http { writeExchange(http, into: &bytes) }
        setInteger(UInt32(truncatingIfNeeded: bytes.count - lengthIndex - 4), at: lengthIndex, in: &bytes)
    }

    /// Appends `value`, big-endian.
    @inline(__always)
    static func writeInteger<T: FixedWidthInteger>(_ value: T, into bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    /// Overwrites the bytes at `index` with `value`, big-endian (a length written before what it counts).
    @inline(__always)
    static func setInteger<T: FixedWidthInteger>(_ value: T, at index: Int, in bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { $0.storeBytes(of: value.bigEndian, toByteOffset: index, as: T.self) }
    }

    /// Appends a `str`: a `u32` byte count and the UTF-8, cut at a character boundary below `limit` and marked `…`.
    @inline(__always)
    static func writeString(_ string: String, limit: Int, into bytes: inout [UInt8]) {
        let utf8 = string.utf8
        if utf8.count <= limit {
            writeInteger(UInt32(utf8.count), into: &bytes)
            bytes.append(contentsOf: utf8)
            return
        }
        // Cut at a character boundary below the limit and mark the cut.
        let prefix = Array(utf8.prefix(max(0, limit - 3)))
        var end = prefix.count
        while end > 0 && prefix[end - 1] & 0xC0 == 0x80 { end -= 1 }
        if end > 0 && prefix[end - 1] >= 0xC0 { end -= 1 }
        let mark = "…".utf8
        writeInteger(UInt32(end + mark.count), into: &bytes)
        bytes.append(contentsOf: prefix[0..<end])
        bytes.append(contentsOf: mark)
    }

    static func writeBytes(_ data: Data, into bytes: inout [UInt8]) {
        writeInteger(UInt32(data.count), into: &bytes)
        bytes.append(contentsOf: data)
    }

    static func writeMetadata(_ metadata: Logger.Metadata, depth: Int, into bytes: inout [UInt8]) {
        // Iterated in place: an array of the entries would be an allocation for every record sent.
        let count = min(metadata.count, maximumEntries)
        writeInteger(UInt32(count), into: &bytes)
        for (key, value) in metadata.prefix(count) {
            writeString(key, limit: maximumNameBytes, into: &bytes)
            writeValue(value, depth: depth + 1, into: &bytes)
        }
    }

    static func writeValue(_ value: Logger.MetadataValue, depth: Int, into bytes: inout [UInt8]) {
        switch value {
        case .string(let string):
            bytes.append(0)
            writeString(string, limit: maximumValueBytes, into: &bytes)
        case .stringConvertible(let convertible):
            bytes.append(0)
            writeString(convertible.description, limit: maximumValueBytes, into: &bytes)
        case .array(let values) where depth < maximumDepth:
            bytes.append(1)
            let kept = values.prefix(maximumEntries)
            writeInteger(UInt32(kept.count), into: &bytes)
            for value in kept { writeValue(value, depth: depth + 1, into: &bytes) }
        case .dictionary(let dictionary) where depth < maximumDepth:
            bytes.append(2)
            writeMetadata(dictionary, depth: depth, into: &bytes)
        case .array, .dictionary:
            bytes.append(0)
            writeString("…", limit: maximumValueBytes, into: &bytes)
        }
    }

    /// `seconds` in whole nanoseconds, saturated to `Int64` (some 292 years either way of 1970) and 0 for NaN: an
    /// app's `Date.distantFuture` or an infinite duration must not trap on the log queue.
    static func nanoseconds(_ seconds: Double) -> Int64 {
        let value = (seconds * 1e9).rounded()
        if let exact = Int64(exactly: value) { return exact }
        return value.isNaN ? 0 : (value > 0 ? .max : .min)
    }

    static func writeExchange(_ exchange: HTTPExchange, into bytes: inout [UInt8]) {
        writeString(exchange.method, limit: maximumNameBytes, into: &bytes)
        writeString(exchange.url, limit: maximumValueBytes, into: &bytes)
        writeHeaders(exchange.requestHeaders, into: &bytes)
        writeBody(exchange.requestBody, into: &bytes)
        writeInteger(Int32(clamping: exchange.status ?? -1), into: &bytes)
        writeHeaders(exchange.responseHeaders, into: &bytes)
        writeBody(exchange.responseBody, into: &bytes)
        writeInteger(nanoseconds(exchange.startTime.timeIntervalSince1970), into: &bytes)
        writeInteger(nanoseconds(exchange.duration), into: &bytes)
        if let error = exchange.error {
            bytes.append(1)
            writeString(error, limit: maximumValueBytes, into: &bytes)
        } else {
            bytes.append(0)
        }
    }

    static func writeHeaders(_ headers: [HTTPHeader], into bytes: inout [UInt8]) {
        let kept = headers.prefix(maximumEntries)
        writeInteger(UInt32(kept.count), into: &bytes)
        for header in kept {
            writeString(header.name, limit: maximumNameBytes, into: &bytes)
            writeString(header.value, limit: maximumValueBytes, into: &bytes)
        }
    }

    static func writeBody(_ body: HTTPBody?, into bytes: inout [UInt8]) {
        guard let body else {
            bytes.append(0)
            return
        }
        bytes.append(1)
        writeInteger(UInt64(body.totalBytes), into: &bytes)
        writeBytes(body.data, into: &bytes)
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
        let (record, consumed) = try buffer.withUnsafeReadableBytes { bytes -> (LogRecord, Int) in
            var reader = EntryReader(bytes)
            let record = try reader.entry(origin: origin)
            return (record, reader.position)
        }
        buffer.moveReaderIndex(forwardBy: consumed)
        return record
    }

    /// Reads entries from contiguous bytes with bounds checked at every step, in one pass, without a `ByteBuffer`
    /// call per field (each of those checks exclusive access to the buffer's storage at run time).
    struct EntryReader {
        let bytes: UnsafeRawBufferPointer
        /// Bytes consumed so far.
        private(set) var position = 0

        init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

        var remaining: Int { bytes.count - position }

        /// One entry: its length, then a body of exactly that many bytes.
        mutating func entry(origin: Origin) throws -> LogRecord {
            guard remaining >= 4 else { throw DecodingError(description: "truncated entry") }
            guard var body = entryBody() else {
                throw DecodingError(description: "entry runs past the end of the batch")
            }
            return try body.record(origin: origin)
        }

        /// A reader over exactly the next entry's body, its length consumed with it; `nil`, with nothing consumed,
        /// when the bytes left do not hold a whole entry.
        mutating func entryBody() -> EntryReader? {
            guard remaining >= 4 else { return nil }
            let length = Int(UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: position, as: UInt32.self)))
            guard length <= remaining - 4 else { return nil }
            let body = EntryReader(UnsafeRawBufferPointer(rebasing: bytes[position + 4..<position + 4 + length]))
            position += 4 + length
            return body
        }

        /// The sequence number an entry body starts with, without consuming it; `nil` when it is shorter than that.
        func peekSequence() -> UInt64? {
            guard remaining >= 8 else { return nil }
            return UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: position, as: UInt64.self))
        }

        /// The record an entry body holds, all of it.
        mutating func record(origin: Origin) throws -> LogRecord {
            let record = try body(origin: origin)
            if remaining != 0 {
                throw DecodingError(description: "\(remaining) stray bytes after an entry")
            }
            return record
        }

        private mutating func body(origin: Origin) throws -> LogRecord {
            let sequence = try integer(UInt64.self)
            let time = try integer(Int64.self)
            let levelCode = try integer(UInt8.self)
            guard let level = Logger.Level(code: levelCode) else {
                throw DecodingError(description: "unknown level \(levelCode)")
            }
            let flags = try integer(UInt8.self)
            let label = try string()
            let message = try string()
            let source = try string()
            let file = try string()
            let function = try string()
            let line = try integer(UInt64.self)
            let metadata = try metadata(depth: 0)
            let http = flags & 1 != 0 ? try exchange() : nil
            return LogRecord(
                sequence: sequence, timestamp: Date(timeIntervalSince1970: Double(time) / 1e9), level: level,
                label: label, message: message, metadata: metadata, source: source, file: file, function: function,
                line: UInt(truncatingIfNeeded: line), appName: origin.appName, host: origin.host,
                processID: origin.processID, http: http)
        }

        @inline(__always)
        mutating func integer<T: FixedWidthInteger>(_: T.Type) throws -> T {
            let size = MemoryLayout<T>.size
            guard size <= remaining else { throw DecodingError(description: "truncated entry") }
            let value = T(bigEndian: bytes.loadUnaligned(fromByteOffset: position, as: T.self))
            position += size
            return value
        }

        mutating func string() throws -> String {
            String(decoding: try lengthPrefixed(what: "a string"), as: UTF8.self)
        }

        mutating func data() throws -> Data {
            Data(try lengthPrefixed(what: "a body"))
        }

        /// The bytes after a 32-bit length (`what` they are, for the error when they run past the entry's end).
        @inline(__always)
        private mutating func lengthPrefixed(what: String) throws -> UnsafeRawBufferPointer {
            let length = Int(try integer(UInt32.self))
            guard length <= remaining else {
                throw DecodingError(description: "\(what) runs past the end of its entry")
            }
            defer { position += length }
            return UnsafeRawBufferPointer(rebasing: bytes[position..<position + length])
        }

        /// A count that cannot be satisfied by the bytes left (each element takes at least `minimumSize`) is refused
        /// before anything is allocated for it.
        mutating func count(minimumSize: Int) throws -> Int {
            let count = Int(try integer(UInt32.self))
            guard count * minimumSize <= remaining else {
                throw DecodingError(description: "a count of \(count) is larger than the entry")
            }
            return count
        }

        mutating func metadata(depth: Int) throws -> Logger.Metadata {
            guard depth <= maximumDepth else { throw DecodingError(description: "metadata nested too deeply") }
            let count = try count(minimumSize: 5)
            var metadata: Logger.Metadata = [:]
            metadata.reserveCapacity(min(count, 64))  // the count is the peer's: grow as the entries decode
            for _ in 0..<count {
                let key = try string()
                metadata[key] = try value(depth: depth + 1)
            }
            return metadata
        }

        mutating func value(depth: Int) throws -> Logger.MetadataValue {
            guard depth <= maximumDepth + 1 else { throw DecodingError(description: "metadata nested too deeply") }
            let tag = try integer(UInt8.self)
            switch tag {
            case 0:
                return .string(try string())
            case 1:
                let count = try count(minimumSize: 1)
                var values: [Logger.MetadataValue] = []
                values.reserveCapacity(min(count, 64))
                for _ in 0..<count { values.append(try value(depth: depth + 1)) }
                return .array(values)
            case 2:
                return .dictionary(try metadata(depth: depth))
            default:
                throw DecodingError(description: "unknown metadata tag \(tag)")
            }
        }

        mutating func exchange() throws -> HTTPExchange {
            let method = try string()
            let url = try string()
            let requestHeaders = try headers()
            let requestBody = try body()
            let status = try integer(Int32.self)
            let responseHeaders = try headers()
            let responseBody = try body()
            let start = try integer(Int64.self)
            let duration = try integer(Int64.self)
            let hasError = try integer(UInt8.self)
            let error = hasError != 0 ? try string() : nil
            return HTTPExchange(
                method: method, url: url, requestHeaders: requestHeaders, requestBody: requestBody,
                status: status < 0 ? nil : Int(status), responseHeaders: responseHeaders, responseBody: responseBody,
                startTime: Date(timeIntervalSince1970: Double(start) / 1e9), duration: Double(duration) / 1e9,
                error: error)
        }

        mutating func headers() throws -> [HTTPHeader] {
            let count = try count(minimumSize: 8)
            var headers: [HTTPHeader] = []
            headers.reserveCapacity(min(count, 64))
            for _ in 0..<count { headers.append(HTTPHeader(name: try string(), value: try string())) }
            return headers
        }

        mutating func body() throws -> HTTPBody? {
            let present = try integer(UInt8.self)
            guard present != 0 else { return nil }
            let total = try integer(UInt64.self)
            let data = try data()
            return HTTPBody(data, totalBytes: Int(clamping: total))
        }
    }
}
