import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// A log call as it waits in the ``LogBuffer``: the event exactly as swift-log handed it over, plus the sequence
/// number, the time and the metadata that was current. Merging metadata, deriving the source and encoding all happen
/// later, on the sending side, so that the log call itself stays cheap.
struct PendingRecord: @unchecked Sendable {
    // @unchecked: `LogEvent.error` is `any Error` without `Sendable`; the record is only read, never mutated, after
    // it is stored, and the error is only turned into text.
    var sequence: UInt64
    var timeNanos: Int64
    var label: String
    var event: LogEvent
    var handlerMetadata: Logger.Metadata
    var providerMetadata: Logger.Metadata?
    var http: HTTPExchangeBox?

    /// The metadata a viewer sees: handler, then provider, then the call's own; the error, if any, as `error`.
    var mergedMetadata: Logger.Metadata {
        var merged = handlerMetadata
        if let provided = providerMetadata, !provided.isEmpty {
            if merged.isEmpty { merged = provided } else { merged.merge(provided) { _, new in new } }
        }
        if let explicit = event.metadata, !explicit.isEmpty {
            if merged.isEmpty { merged = explicit } else { merged.merge(explicit) { _, new in new } }
        }
        if let error = event.error, merged["error"] == nil {
            merged["error"] = .string("\(error)")
        }
        return merged
    }
}

// The sending side's encoding of a pending record lives here rather than in RecordCoding.swift, which then needs
// nothing of the log call's types (LogEvent): the fuzz target for batches compiles RecordCoding.swift as it is.
extension RecordCoding {
    /// Appends one entry for `record` (metadata merged, source derived here, on the sending side).
    static func writeEntry(_ record: PendingRecord, into bytes: inout [UInt8]) {
        let event = record.event
        writeEntry(
            sequence: record.sequence, timeNanos: record.timeNanos, level: event.level, label: record.label,
            message: event.message.description, source: event.source, file: event.file, function: event.function,
            line: event.line, metadata: record.mergedMetadata, http: record.http?.exchange, into: &bytes)
    }

    /// Appends one entry for `record` to `buffer`.
    static func writeEntry(_ record: PendingRecord, into buffer: inout ByteBuffer) {
        var bytes: [UInt8] = []
        writeEntry(record, into: &bytes)
        buffer.writeBytes(bytes)
    }
}

/// Keeps an ``HTTPExchange`` out of line so that every buffer slot stays small.
final class HTTPExchangeBox: Sendable {
    let exchange: HTTPExchange
    init(_ exchange: HTTPExchange) { self.exchange = exchange }
}

/// The bounded in-memory ring every log call writes into: the one piece of state shared by all handlers of a source.
///
/// A log call takes the lock once, stores its record in the slot of its sequence number (overwriting the oldest when
/// full) and returns; it never allocates beyond the record itself and never waits on anything but this lock. The
/// sending side reads copies of records by sequence number. A record overwritten before a consumer read it is lost to
/// that consumer, which detects it by the sequence number and reports it.
final class LogBuffer: @unchecked Sendable {
    // @unchecked: every stored property below the lock is only touched with `lock` held.
    private let lock = NIOLock()
    let capacity: Int
    private var slots: ContiguousArray<PendingRecord> = []
    /// The sequence number stored in slot 0 of the first lap.
    private var baseSequence: UInt64
    private var nextSequence: UInt64
    /// Set by the consumer when it went idle and wants to be woken by the next record.
    private var wakeArmed = false
    private var wake: (@Sendable () -> Void)?

    /// - Parameters:
    ///   - capacity: records kept; at least 1.
    ///   - firstSequence: the sequence number of the first record (continues a spool's numbering).
    init(capacity: Int, firstSequence: UInt64 = 1) {
        self.capacity = max(1, capacity)
        self.baseSequence = firstSequence
        self.nextSequence = firstSequence
        slots.reserveCapacity(self.capacity)
    }

    /// Sets the closure called (outside the lock) when a record arrives while the consumer is armed.
    func setWake(_ wake: @escaping @Sendable () -> Void) {
        lock.withLockVoid { self.wake = wake }
    }

    /// Stores a record; returns its sequence number. This is the whole cost of a log call beyond building `record`.
    ///
    /// The record is moved, never copied: taken as `consuming`, and once the ring is full swapped with the oldest
    /// slot, so that the log call neither retains the record's strings and dictionaries once more nor releases them
    /// under the lock. The record it replaces is released after the lock, on the caller's thread.
    @inline(__always)
    @discardableResult
    func append(_ record: consuming PendingRecord) -> UInt64 {
        var record = record
        var wakeNow: (@Sendable () -> Void)?
        lock.lock()
        let sequence = nextSequence
        record.sequence = sequence
        nextSequence &+= 1
        if slots.count < capacity {
            slots.append(record)
        } else {
            let index = Int((sequence &- baseSequence) % UInt64(capacity))
            swap(&slots[index], &record)  // `record` now holds the evicted one, released when it goes out of scope
        }
        if wakeArmed {
            wakeArmed = false
            wakeNow = wake
        }
        lock.unlock()
        wakeNow?()
        return sequence
    }

    /// The oldest sequence number still held and the next one to be assigned (`oldest == next` when empty).
    var bounds: (oldest: UInt64, next: UInt64) {
        lock.withLock { boundsLocked }
    }

    private var boundsLocked: (oldest: UInt64, next: UInt64) {
        (nextSequence &- UInt64(slots.count), nextSequence)
    }

    /// Copies of up to `maximumCount` records starting at `sequence` (or at the oldest held, if `sequence` was
    /// overwritten), never past `limit` (inclusive). The records returned are consecutive.
    ///
    /// Copied ``readChunk`` records per hold of the lock: a copy retains the record's strings and dictionaries, and a
    /// log call waiting for the lock while a thousand records are copied would wait tens of microseconds. When the
    /// records after a chunk were overwritten before the next chunk was read, the read ends there (the caller sees the
    /// loss on its next read).
    ///
    /// `betweenChunks` runs after each chunk, outside the lock (tests use it to write while a read is under way).
    func read(
        from sequence: UInt64, maximumCount: Int, through limit: UInt64 = .max,
        betweenChunks: (() -> Void)? = nil
    ) -> [PendingRecord] {
        var result: [PendingRecord] = []
        result.reserveCapacity(min(maximumCount, Self.readChunk))  // grows as chunks come: most reads are short
        var next = sequence
        while result.count < maximumCount {
            let wanted = min(Self.readChunk, maximumCount - result.count)
            let copied = lock.withLock { () -> Int in
                let (oldest, newest) = boundsLocked
                if !result.isEmpty && next < oldest { return 0 }
                let start = max(next, oldest)
                let end = min(newest, limit == .max ? newest : limit &+ 1)
                guard start < end else { return 0 }
                let count = min(Int(end - start), wanted)
                var index = Int((start &- baseSequence) % UInt64(capacity))
                for _ in 0..<count {
                    result.append(slots[index])
                    index += 1
                    if index == capacity { index = 0 }
                }
                next = start &+ UInt64(count)
                return count
            }
            if copied < wanted { break }
            betweenChunks?()
        }
        return result
    }

    /// Records copied per hold of the lock in ``read(from:maximumCount:through:)``.
    static let readChunk = 64

    /// Arms the wake-up if no record arrived since `next` was observed; returns `false` (and does not arm) if one did.
    func arm(ifNextIs next: UInt64) -> Bool {
        lock.withLock {
            guard nextSequence == next else { return false }
            wakeArmed = true
            return true
        }
    }

    /// Disarms the wake-up (the consumer is busy again, or has nothing to wait for).
    func disarm() {
        lock.withLockVoid { wakeArmed = false }
    }
}
