import Foundation
import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The opt-in spool: records written to files in a directory until a viewer acknowledges them, so that they survive a
/// crash or restart of the app and a viewer's absence. Used only from the source's sending queue.
///
/// Layout of the directory (see `Docs/Logging.md`):
/// - `lock`: held (`flock`) while a process uses the spool; a second process is refused.
/// - `stream`: the stream id, created once; a viewer that knows it continues after the last record it received.
/// - `acked`: the highest sequence number acknowledged, as decimal text.
/// - `seg-<first sequence>.log`: segments of at most `maximumBytes / 8` bytes: an 8-byte magic `CHIRPSP1`, then
///   entries in the binary record format. A torn last entry (a crash mid-write) is cut off when the spool is opened.
///
/// Eviction: when the segments together exceed `maximumBytes`, the oldest segment is deleted, acknowledged or not;
/// its unacknowledged records are counted in ``evicted`` and reported to viewers as lost ("spool full").
/// Segments whose records are all acknowledged are deleted at once.
final class LogSpool: @unchecked Sendable {
    // @unchecked: confined to the pump queue after `init`.
    struct Segment {
        var firstSequence: UInt64
        var lastSequence: UInt64
        var count: Int
        var bytes: Int
        var path: String
    }

    /// A spool could not be opened.
    struct SpoolError: Error, CustomStringConvertible {
        var description: String
    }

    static let magic: [UInt8] = Array("CHIRPSP1".utf8)

    let directory: String
    let maximumBytes: Int
    let segmentBytes: Int
    let streamID: String
    private(set) var ackedThrough: UInt64
    private(set) var segments: [Segment] = []
    /// Unacknowledged records deleted because the spool was full.
    private(set) var evicted: UInt64 = 0
    private var lockFD: Int32 = -1
    private var ackFD: Int32 = -1
    private var activeFD: Int32 = -1
    private var ackDirty = false
    private var cache: (path: String, bytes: Int, data: ByteBuffer)?
    private var readHint: (path: String, offset: Int, sequence: UInt64)?

    /// Opens (or creates) the spool in `directory` and recovers what a previous run left.
    /// - Throws: ``SpoolError`` when the directory cannot be used or another process holds it.
    init(directory: String, maximumBytes: Int) throws {
        self.directory = directory
        self.maximumBytes = max(64 * 1024, maximumBytes)
        self.segmentBytes = max(16 * 1024, self.maximumBytes / 8)
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw SpoolError(description: "cannot create spool directory \(directory): \(error.localizedDescription)")
        }
        lockFD = open(directory + "/lock", O_CREAT | O_RDWR | O_CLOEXEC, 0o644)
        guard lockFD >= 0 else { throw SpoolError(description: "cannot open \(directory)/lock: \(Self.errnoText())") }
        guard flock(lockFD, LOCK_EX | LOCK_NB) == 0 else {
            close(lockFD)
            throw SpoolError(description: "spool directory \(directory) is in use by another process")
        }
        streamID = try Self.loadStreamID(directory)
        let ackPath = directory + "/acked"
        let ackText = (try? String(contentsOfFile: ackPath, encoding: .utf8)) ?? ""
        // A mark past the largest sequence number a spool can reach is not ours (a damaged or edited file): the app
        // numbers its records after it, which would overflow at the next start.
        let mark = UInt64(ackText.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        ackedThrough = mark <= Self.maximumSequence ? mark : 0
        ackFD = open(ackPath, O_CREAT | O_WRONLY | O_CLOEXEC, 0o644)
        guard ackFD >= 0 else { throw SpoolError(description: "cannot open \(ackPath): \(Self.errnoText())") }
        try recover()
    }

    deinit { closeFiles() }

    /// Releases the files (and the lock), writing the acknowledgement mark first.
    func closeFiles() {
        flushAcknowledgement()
        for fd in [activeFD, ackFD, lockFD] where fd >= 0 { close(fd) }
        activeFD = -1
        ackFD = -1
        lockFD = -1
    }

    /// The highest sequence number spooled or acknowledged: the app numbers new records after it.
    var lastSequence: UInt64 { max(segments.last?.lastSequence ?? 0, ackedThrough) }
    /// The lowest sequence number still in the spool.
    var firstSequence: UInt64? { segments.first { $0.count > 0 }?.firstSequence }
    /// Records in the spool not acknowledged yet.
    var unacknowledged: UInt64 {
        segments.reduce(0) { $0 + Self.unacked(in: $1, ackedThrough: ackedThrough) }
    }
    /// Bytes in the spool's segments.
    var totalBytes: Int { segments.reduce(0) { $0 + $1.bytes } }

    // MARK: Writing

    /// Appends `entries` (records `first...last`, in order) and evicts the oldest segments while over the limit.
    func append(_ entries: ByteBuffer, first: UInt64, last: UInt64, count: Int) throws {
        try append(Array(entries.readableBytesView), first: first, last: last, count: count)
    }

    /// Appends `entries` (records `first...last`, in order, as ``RecordCoding`` writes them) and evicts the oldest
    /// segments while over the limit.
    func append(_ entries: [UInt8], first: UInt64, last: UInt64, count: Int) throws {
        if activeFD < 0 || (segments.last?.bytes ?? 0) >= segmentBytes {
            try startSegment(first: first)
        }
        try writeAll(activeFD, entries)
        segments[segments.count - 1].lastSequence = last
        segments[segments.count - 1].count += count
        segments[segments.count - 1].bytes += entries.count
        while totalBytes > maximumBytes && segments.count > 1 {
            let oldest = segments.removeFirst()
            evicted += Self.unacked(in: oldest, ackedThrough: ackedThrough)
            unlink(oldest.path)
        }
    }

    /// Records that everything through `sequence` was handled by a viewer; deletes fully acknowledged segments.
    func acknowledge(through sequence: UInt64) {
        guard sequence > ackedThrough else { return }
        ackedThrough = min(sequence, lastSequence)
        ackDirty = true
        while segments.count > 1, segments[0].lastSequence <= ackedThrough {
            unlink(segments.removeFirst().path)
        }
    }

    /// Writes the acknowledgement mark if it changed (called at the end of each sending pass).
    func flushAcknowledgement() {
        guard ackDirty, ackFD >= 0 else { return }
        ackDirty = false
        let text = Array(String(ackedThrough).utf8) + Array(repeating: UInt8(ascii: " "), count: 1)
        _ = ftruncate(ackFD, 0)
        _ = text.withUnsafeBytes { pwrite(ackFD, $0.baseAddress, $0.count, 0) }
    }

    // MARK: Reading

    /// Entries from the first record at or after `sequence`, up to about `maximumBytes` (at least one entry), or `nil`
    /// when the spool holds nothing at or after it.
    func read(from sequence: UInt64, maximumBytes: Int) -> (
        entries: ByteBuffer, first: UInt64, last: UInt64, count: Int
    )? {
        guard let index = segments.firstIndex(where: { $0.count > 0 && $0.lastSequence >= sequence }) else {
            return nil
        }
        let segment = segments[index]
        guard var data = load(segment) else { return nil }
        if let hint = readHint, hint.path == segment.path, hint.sequence == sequence, hint.offset <= data.writerIndex {
            data.moveReaderIndex(to: hint.offset)
        } else {
            data.moveReaderIndex(to: Self.magic.count)
        }
        // Skip to `sequence`.
        while let (entrySequence, length) = RecordCoding.peekEntry(data), entrySequence < sequence {
            data.moveReaderIndex(forwardBy: length)
        }
        let start = data.readerIndex
        var first: UInt64?
        var last: UInt64 = 0
        var count = 0
        while let (entrySequence, length) = RecordCoding.peekEntry(data) {
            if count > 0 && data.readerIndex - start + length > maximumBytes { break }
            if first == nil { first = entrySequence }
            last = entrySequence
            count += 1
            data.moveReaderIndex(forwardBy: length)
        }
        guard let first, count > 0 else { return nil }
        readHint = (segment.path, data.readerIndex, last + 1)
        let entries = RecordCoding.bytes(of: data, from: start, to: data.readerIndex)
        return (entries, first, last, count)
    }

    private func load(_ segment: Segment) -> ByteBuffer? {
        let size = Self.magic.count + segment.bytes
        if let cache, cache.path == segment.path, cache.bytes == size { return cache.data }
        guard let contents = FileManager.default.contents(atPath: segment.path) else { return nil }
        var buffer = ByteBuffer(data: contents.prefix(size))
        buffer.moveReaderIndex(to: 0)
        cache = (segment.path, size, buffer)
        return buffer
    }

    // MARK: Recovery

    /// The largest sequence number recovery keeps (2^62): an app numbers its records from 1, and could not log this
    /// many in centuries; an entry or a mark past it is damage, cut off like a torn tail.
    static let maximumSequence: UInt64 = 1 << 62

    private func recover() throws {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        let segmentNames = names.filter { $0.hasPrefix("seg-") && $0.hasSuffix(".log") }.sorted()
        var previousLast: UInt64 = 0
        for name in segmentNames {
            let path = directory + "/" + name
            guard let contents = FileManager.default.contents(atPath: path) else { continue }
            var buffer = ByteBuffer(data: contents)
            guard buffer.readBytes(length: Self.magic.count) == Self.magic else {
                unlink(path)
                continue
            }
            var segment = Segment(firstSequence: 0, lastSequence: 0, count: 0, bytes: 0, path: path)
            while let (sequence, length) = RecordCoding.peekEntry(buffer), sequence > previousLast,
                sequence <= Self.maximumSequence
            {
                if segment.count == 0 { segment.firstSequence = sequence }
                segment.lastSequence = sequence
                segment.count += 1
                segment.bytes += length
                previousLast = sequence
                buffer.moveReaderIndex(forwardBy: length)
            }
            if Self.magic.count + segment.bytes < contents.count {
                // A torn or corrupt tail: keep what is whole.
                _ = truncate(path, off_t(Self.magic.count + segment.bytes))
            }
            if segment.count == 0 || segment.lastSequence <= ackedThrough && name != segmentNames.last {
                unlink(path)
                continue
            }
            segments.append(segment)
        }
        if let last = segments.last {
            activeFD = open(last.path, O_WRONLY | O_APPEND | O_CLOEXEC)
            if activeFD < 0 { throw SpoolError(description: "cannot open \(last.path): \(Self.errnoText())") }
        }
    }

    private func startSegment(first: UInt64) throws {
        if activeFD >= 0 { close(activeFD) }
        let path = directory + "/" + String(format: "seg-%020llu.log", first)
        activeFD = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_APPEND | O_CLOEXEC, 0o644)
        guard activeFD >= 0 else { throw SpoolError(description: "cannot create \(path): \(Self.errnoText())") }
        try writeAll(activeFD, Self.magic)
        segments.append(Segment(firstSequence: first, lastSequence: first &- 1, count: 0, bytes: 0, path: path))
    }

    private static func loadStreamID(_ directory: String) throws -> String {
        let path = directory + "/stream"
        if let text = try? String(contentsOfFile: path, encoding: .utf8) {
            let id = text.trimmingCharacters(in: .whitespacesAndNewlines)
            if !id.isEmpty && id.utf8.count <= 64 { return id }
        }
        let id = UUID().uuidString.lowercased()
        do {
            try (id + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        } catch {
            throw SpoolError(description: "cannot write \(path): \(error.localizedDescription)")
        }
        return id
    }

    private static func unacked(in segment: Segment, ackedThrough: UInt64) -> UInt64 {
        guard segment.count > 0, segment.lastSequence > ackedThrough else { return 0 }
        if segment.firstSequence > ackedThrough { return UInt64(segment.count) }
        return min(UInt64(segment.count), segment.lastSequence - ackedThrough)
    }

    private func writeAll(_ fd: Int32, _ array: [UInt8]) throws {
        var offset = 0
        while offset < array.count {
            let written = array.withUnsafeBytes { raw -> Int in
                guard let base = raw.baseAddress else { return 0 }
                return write(fd, base + offset, raw.count - offset)
            }
            if written < 0 {
                if errno == EINTR { continue }
                throw SpoolError(description: "cannot write to the spool: \(Self.errnoText())")
            }
            offset += written
        }
    }

    static func errnoText() -> String { String(cString: strerror(errno)) }
}
