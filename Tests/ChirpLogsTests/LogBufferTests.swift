import Logging
import Testing

@testable import ChirpLogs

/// The ring every log call writes into: sequence numbers, overwriting when full, and reads by sequence number that
/// come back consecutive whatever their size.
@Suite(.timeLimit(.minutes(5))) struct LogBufferTests {
    private func record(_ text: String) -> PendingRecord {
        PendingRecord(
            sequence: 0, timeNanos: 0, label: "test",
            event: LogEvent(
                level: .info, message: "\(text)", metadata: ["n": "\(text)"], source: nil, file: #fileID,
                function: #function, line: #line),
            handlerMetadata: [:], providerMetadata: nil, http: nil)
    }

    private func filled(capacity: Int, count: Int, firstSequence: UInt64 = 1) -> LogBuffer {
        let buffer = LogBuffer(capacity: capacity, firstSequence: firstSequence)
        for n in 0..<count { buffer.append(record("\(n)")) }
        return buffer
    }

    /// Reads from sequence 1, and while the first chunk is out of the lock (once), writes the records `written`.
    private func read(_ buffer: LogBuffer, maximumCount: Int, writingMeanwhile written: Range<Int>)
        -> [PendingRecord]
    {
        var wrote = false
        return buffer.read(from: 1, maximumCount: maximumCount) {
            guard !wrote else { return }
            wrote = true
            for n in written { buffer.append(record("\(n)")) }
        }
    }

    @Test func recordsAreNumberedFromTheFirstSequence() {
        let buffer = LogBuffer(capacity: 8, firstSequence: 41)
        #expect(buffer.append(record("a")) == 41)
        #expect(buffer.append(record("b")) == 42)
        #expect(buffer.bounds == (oldest: 41, next: 43))
    }

    @Test func aReadLongerThanOneChunkComesBackWholeAndInOrder() {
        let buffer = filled(capacity: 1000, count: 700)
        let records = buffer.read(from: 1, maximumCount: 5 * LogBuffer.readChunk + 3)
        #expect(records.map(\.sequence) == Array(1...UInt64(5 * LogBuffer.readChunk + 3)))
        #expect(records.map { $0.event.message.description } == (0..<(5 * LogBuffer.readChunk + 3)).map { "\($0)" })
    }

    @Test func aReadStopsAtTheNewestAndAtItsLimit() {
        let buffer = filled(capacity: 1000, count: 150)
        #expect(buffer.read(from: 100, maximumCount: 1000).map(\.sequence) == Array(100...150))
        #expect(buffer.read(from: 10, maximumCount: 1000, through: 80).map(\.sequence) == Array(10...80))
        #expect(buffer.read(from: 151, maximumCount: 1000).isEmpty)
    }

    @Test func aFullRingKeepsTheNewestAndAReadOfOverwrittenRecordsStartsAtTheOldest() {
        let buffer = filled(capacity: 100, count: 350)
        #expect(buffer.bounds == (oldest: 251, next: 351))
        let records = buffer.read(from: 1, maximumCount: 1000)
        #expect(records.map(\.sequence) == Array(251...350))
        #expect(records.first?.event.message.description == "250")
    }

    @Test func aReadWhoseNextRecordsAreOverwrittenMeanwhileEndsBeforeThem() {
        // While the first chunk is out of the lock, the writer laps the ring past the next record to read: the read
        // ends with the records it had, consecutive, and the next read starts at the oldest (the loss shows there).
        let buffer = filled(capacity: 100, count: 100)
        let records = read(buffer, maximumCount: 100, writingMeanwhile: 100..<180)
        #expect(records.map(\.sequence) == Array(1...UInt64(LogBuffer.readChunk)))
        #expect(buffer.read(from: UInt64(LogBuffer.readChunk) + 1, maximumCount: 1).first?.sequence == 81)
    }

    @Test func aReadWhoseNextRecordsSurviveGoesOnAcrossChunks() {
        // The control: records written while a read is under way, none of them over the ones it still has to read.
        let buffer = filled(capacity: 200, count: 100)
        let records = read(buffer, maximumCount: 150, writingMeanwhile: 100..<150)
        #expect(records.map(\.sequence) == Array(1...150))
    }
}
