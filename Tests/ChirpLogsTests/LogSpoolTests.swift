import ChirpTestSupport
import Foundation
import Logging
import NIOCore
import Testing

@testable import ChirpLogs

@Suite(.timeLimit(.minutes(5))) struct LogSpoolTests {
    func entries(_ range: ClosedRange<UInt64>, size: Int = 0) -> ByteBuffer {
        var buffer = ByteBuffer()
        for sequence in range {
            RecordCoding.writeEntry(
                LogRecord(
                    sequence: sequence, timestamp: Date(), level: .info, label: "t",
                    message: "record \(sequence)" + String(repeating: "x", count: size)), into: &buffer)
        }
        return buffer
    }

    func sequences(_ spool: LogSpool, from: UInt64) -> [UInt64] {
        var result: [UInt64] = []
        var cursor = from
        while let chunk = spool.read(from: cursor, maximumBytes: 4096) {
            var entries = chunk.entries
            while let (sequence, length) = RecordCoding.peekEntry(entries) {
                result.append(sequence)
                entries.moveReaderIndex(forwardBy: length)
            }
            cursor = chunk.last + 1
        }
        return result
    }

    @Test func recordsSurviveReopeningAndTornTailsAreCut() throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var stream = ""
        do {
            let spool = try LogSpool(directory: directory, maximumBytes: 1 << 20)
            stream = spool.streamID
            try spool.append(entries(1...50), first: 1, last: 50, count: 50)
            spool.acknowledge(through: 20)
            spool.closeFiles()
        }
        // A crash in the middle of a write leaves half an entry at the end.
        let segment = try #require(
            try FileManager.default.contentsOfDirectory(atPath: directory).first { $0.hasPrefix("seg-") })
        let handle = try #require(FileHandle(forWritingAtPath: directory + "/" + segment))
        handle.seekToEndOfFile()
        let torn = entries(51...51)
        handle.write(Data(torn.readableBytesView.prefix(torn.readableBytes / 2)))
        try handle.close()

        let reopened = try LogSpool(directory: directory, maximumBytes: 1 << 20)
        #expect(reopened.streamID == stream)
        #expect(reopened.ackedThrough == 20)
        #expect(reopened.lastSequence == 50)
        #expect(reopened.unacknowledged == 30)
        #expect(sequences(reopened, from: 21) == Array(21...50))
        try reopened.append(entries(51...60), first: 51, last: 60, count: 10)
        #expect(sequences(reopened, from: 45) == Array(45...60))
    }

    @Test func marksAndEntriesPastAnyRealSequenceNumberAreTreatedAsDamage() throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            let spool = try LogSpool(directory: directory, maximumBytes: 1 << 20)
            try spool.append(entries(1...5), first: 1, last: 5, count: 5)
            spool.closeFiles()
        }
        // An edited spool: the acknowledgement mark at the largest number there is, and an entry numbered near it
        // after the good ones. An app numbers new records after `lastSequence`, so these used to make it overflow at
        // every start.
        try "18446744073709551615\n".write(toFile: directory + "/acked", atomically: true, encoding: .utf8)
        let segment = try #require(
            try FileManager.default.contentsOfDirectory(atPath: directory).first { $0.hasPrefix("seg-") })
        let handle = try #require(FileHandle(forWritingAtPath: directory + "/" + segment))
        handle.seekToEndOfFile()
        handle.write(Data(entries(UInt64.max - 1...UInt64.max - 1).readableBytesView))
        try handle.close()

        let reopened = try LogSpool(directory: directory, maximumBytes: 1 << 20)
        #expect(reopened.ackedThrough == 0)
        #expect(reopened.lastSequence == 5)  // the damaged entry was cut off; new records continue at 6
        #expect(sequences(reopened, from: 1) == Array(1...5))
        try reopened.append(entries(6...7), first: 6, last: 7, count: 2)
        #expect(sequences(reopened, from: 4) == Array(4...7))
    }

    @Test func aSecondProcessIsRefused() throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let spool = try LogSpool(directory: directory, maximumBytes: 1 << 20)
        // flock locks belong to the open file description: a second open in this process conflicts like another process.
        #expect(throws: LogSpool.SpoolError.self) { try LogSpool(directory: directory, maximumBytes: 1 << 20) }
        spool.closeFiles()
    }

    @Test func aFullSpoolEvictsTheOldestAndCountsIt() throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let spool = try LogSpool(directory: directory, maximumBytes: 64 * 1024)
        var next: UInt64 = 1
        for _ in 0..<40 {
            try spool.append(entries(next...(next + 9), size: 300), first: next, last: next + 9, count: 10)
            next += 10
        }
        #expect(spool.totalBytes <= 64 * 1024)
        #expect(spool.evicted > 0)
        let first = try #require(spool.firstSequence)
        #expect(spool.evicted == first - 1, "every evicted record is counted")
        #expect(sequences(spool, from: 1) == Array(first...400))
    }

    @Test func acknowledgedSegmentsAreDeleted() throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let spool = try LogSpool(directory: directory, maximumBytes: 256 * 1024)
        var next: UInt64 = 1
        for _ in 0..<20 {
            try spool.append(entries(next...(next + 9), size: 300), first: next, last: next + 9, count: 10)
            next += 10
        }
        let before = spool.segments.count
        spool.acknowledge(through: 150)
        #expect(spool.segments.count < before)
        #expect(spool.unacknowledged == 50)
        #expect(spool.evicted == 0)
    }
}
