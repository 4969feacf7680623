import Foundation
import Logging
import NIOCore
import Testing

@testable import ChirpLogs

@Suite(.timeLimit(.minutes(5))) struct RecordCodingTests {
    let origin = RecordCoding.Origin(appName: "app", host: "box", processID: 42)

    func sampleRecord(http: HTTPExchange? = nil) -> LogRecord {
        LogRecord(
            sequence: 7, timestamp: Date(timeIntervalSince1970: 1_700_000_000.123), level: .warning, label: "orders",
            message: "Zoë ordered 寿司",
            metadata: ["id": "17", "tags": .array(["a", "b"]), "nested": .dictionary(["k": "v"])],
            source: "Orders", file: "Orders/API.swift", function: "place()", line: 42, appName: "app", host: "box",
            processID: 42, http: http)
    }

    @Test func roundTrip() throws {
        let exchange = HTTPExchange(
            method: "POST", url: "http://example.test/orders",
            requestHeaders: [HTTPHeader(name: "Accept", value: "*/*")],
            requestBody: HTTPBody(Data("{\"a\":1}".utf8)), status: 201,
            responseHeaders: [HTTPHeader(name: "Content-Type", value: "application/json")],
            responseBody: HTTPBody(Data("ok".utf8), totalBytes: 10),
            startTime: Date(timeIntervalSince1970: 1_700_000_000),
            duration: 0.0125, error: nil)
        for record in [sampleRecord(), sampleRecord(http: exchange)] {
            var buffer = ByteBuffer()
            RecordCoding.writeEntry(record, into: &buffer)
            let decoded = try RecordCoding.readEntry(&buffer, origin: origin)
            #expect(decoded.sequence == record.sequence)
            #expect(decoded.message == record.message)
            #expect(decoded.metadata == record.metadata)
            #expect(decoded.http == record.http)
            #expect(abs(decoded.timestamp.timeIntervalSince1970 - record.timestamp.timeIntervalSince1970) < 0.000_01)
            #expect(
                decoded.level == .warning && decoded.line == 42 && decoded.appName == "app" && decoded.processID == 42)
            #expect(buffer.readableBytes == 0)
        }
    }

    @Test func anExchangeWithOutOfRangeTimesOrStatusIsCodedSaturated() throws {
        // What an app may hand `report(_:)`: a start in the distant future, an infinite or NaN duration, an odd
        // status. None may trap on the log queue; each is kept as the nearest value the wire can carry.
        for (start, duration) in [(Date.distantFuture, Double.infinity), (Date.distantPast, -Double.infinity)] {
            let exchange = HTTPExchange(
                method: "GET", url: "http://example.test/", status: Int.max, startTime: start, duration: duration)
            var buffer = ByteBuffer()
            RecordCoding.writeEntry(sampleRecord(http: exchange), into: &buffer)
            let decoded = try #require(try RecordCoding.readEntry(&buffer, origin: origin).http)
            #expect(decoded.status == Int(Int32.max))
            let limit = Double(Int64.max) / 1e9
            #expect(abs(abs(decoded.startTime.timeIntervalSince1970) - limit) < 1)
            #expect(abs(abs(decoded.duration) - limit) < 1)
        }
        #expect(RecordCoding.nanoseconds(.nan) == 0)
        #expect(RecordCoding.nanoseconds(1.5) == 1_500_000_000)
    }

    @Test func longStringsAreCutAtACharacterBoundary() throws {
        var record = sampleRecord()
        record.message = String(repeating: "é", count: RecordCoding.maximumMessageBytes)
        var buffer = ByteBuffer()
        RecordCoding.writeEntry(record, into: &buffer)
        let decoded = try RecordCoding.readEntry(&buffer, origin: origin)
        #expect(decoded.message.utf8.count <= RecordCoding.maximumMessageBytes)
        #expect(decoded.message.hasSuffix("…"))
        #expect(decoded.message.dropLast().allSatisfy { $0 == "é" })
    }

    @Test func hostileBytesAreRefusedNotTrusted() throws {
        var good = ByteBuffer()
        RecordCoding.writeEntry(sampleRecord(), into: &good)
        let bytes = Array(good.readableBytesView)
        // Every truncation and a few corruptions either decode or throw; none crashes or allocates wildly.
        for length in 0..<bytes.count {
            var buffer = ByteBuffer(bytes: bytes[0..<length])
            #expect(throws: (any Error).self) { try RecordCoding.readEntry(&buffer, origin: origin) }
        }
        var huge = ByteBuffer()
        huge.writeInteger(UInt32(40))
        huge.writeInteger(UInt64(1))
        huge.writeInteger(Int64(0))
        huge.writeInteger(UInt8(2))
        huge.writeInteger(UInt8(0))
        huge.writeInteger(UInt32.max)  // a label "4 GiB long"
        huge.writeRepeatingByte(0, count: 18)
        #expect(throws: (any Error).self) { try RecordCoding.readEntry(&huge, origin: origin) }
        var random = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            var mutated = bytes
            for _ in 0..<4 {
                mutated[Int.random(in: 4..<mutated.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
            }
            var buffer = ByteBuffer(bytes: mutated)
            _ = try? RecordCoding.readEntry(&buffer, origin: origin)
        }
    }

    @Test func batchesParse() throws {
        var payload = ByteBuffer()
        payload.writeInteger(UInt8(1))
        payload.writeInteger(UInt64(99))
        payload.writeInteger(UInt32(2))
        RecordCoding.writeEntry(sampleRecord(), into: &payload)
        RecordCoding.writeEntry(sampleRecord(), into: &payload)
        let batch = try LogProtocol.parseBatch(Data(payload.readableBytesView), origin: origin)
        #expect(batch.subscription == 99 && batch.records.count == 2 && batch.damage == nil)
        var lying = payload
        lying.setInteger(UInt32(1_000_000), at: 9)
        let short = try LogProtocol.parseBatch(Data(lying.readableBytesView), origin: origin)
        #expect(short.records.count == 2)
        #expect(short.damage == "the batch claims 1000000 records but holds 2")
        var version2 = payload
        version2.setInteger(UInt8(2), at: 0)
        #expect(throws: RecordCoding.DecodingError.self) {
            try LogProtocol.parseBatch(Data(version2.readableBytesView), origin: origin)
        }
    }

    /// A batch of records 1...5 whose third record has a level no version knows.
    func batchWithADamagedRecord() -> ByteBuffer {
        var payload = ByteBuffer()
        payload.writeInteger(UInt8(1))
        payload.writeInteger(UInt64(99))
        payload.writeInteger(UInt32(5))
        for sequence in UInt64(1)...5 {
            var record = sampleRecord()
            record.sequence = sequence
            let start = payload.writerIndex
            RecordCoding.writeEntry(record, into: &payload)
            // length (4), sequence (8), time (8), then the level byte.
            if sequence == 3 { payload.setInteger(UInt8(9), at: start + 4 + 8 + 8) }
        }
        return payload
    }

    @Test func aRecordThatDoesNotDecodeCostsOnlyItself() throws {
        let payload = batchWithADamagedRecord()
        let batch = try LogProtocol.parseBatch(Data(payload.readableBytesView), origin: origin)
        #expect(batch.records.map(\.sequence) == [1, 2, 4, 5])
        #expect(batch.undecodable.map(\.before) == [2] && batch.undecodable.map(\.sequence) == [3])
        #expect(batch.lastSequence == 5)
        #expect(batch.damage == "record 3 does not decode: unknown level 9")

        // Where the entries stop matching the header, parsing stops there, keeping what came before.
        var torn = payload
        torn.moveWriterIndex(to: torn.writerIndex - 10)
        let tornBatch = try LogProtocol.parseBatch(Data(torn.readableBytesView), origin: origin)
        #expect(tornBatch.records.map(\.sequence) == [1, 2, 4] && tornBatch.entryCount == 4)
        #expect(
            tornBatch.damage
                == "record 3 does not decode: unknown level 9; record 5 of 5 runs past the end of the batch")
        var sound = ByteBuffer()
        sound.writeInteger(UInt8(1))
        sound.writeInteger(UInt64(99))
        sound.writeInteger(UInt32(1))
        RecordCoding.writeEntry(sampleRecord(), into: &sound)
        let stray = try LogProtocol.parseBatch(Data(sound.readableBytesView + [0, 0]), origin: origin)
        #expect(stray.records.count == 1)
        #expect(stray.damage == "2 stray bytes after the last record")
        let pastTheEnd = try LogProtocol.parseBatch(
            Data(payload.readableBytesView.prefix(13 + 4) + [0, 0, 0, 200]), origin: origin)
        #expect(pastTheEnd.entryCount == 0)
        #expect(pastTheEnd.damage == "record 1 of 5 runs past the end of the batch")
    }
}
