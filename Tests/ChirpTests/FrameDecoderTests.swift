import Foundation
import NIOCore
import NIOEmbedded
import Testing

@testable import Chirp
@testable import ChirpWire

@Suite(.timeLimit(.minutes(5))) struct FrameDecoderTests {
    private func frameBytes(kind: UInt8, body: [UInt8]) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.writeInteger(UInt32(body.count + 1))
        buffer.writeInteger(kind)
        buffer.writeBytes(body)
        return buffer
    }

    /// Feeds `input` to a connection's ``FrameReader`` in reads of `sizes` bytes (used in turn), then closes; the
    /// frames passed on and the error fired, if any.
    private func read(_ input: ByteBuffer, inReadsOf sizes: [Int], maxFrameSize: Int = 1024) throws -> (
        frames: [Frame], error: (any Error)?
    ) {
        let channel = EmbeddedChannel(handler: FrameReader(FrameDecoder(maxFrameSize: maxFrameSize)))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        var frames: [Frame] = []
        var error: (any Error)?
        var rest = input
        var index = 0
        while rest.readableBytes > 0, error == nil {
            let size = min(sizes[index % sizes.count], rest.readableBytes)
            index += 1
            let chunk = rest.readSlice(length: size) ?? ByteBuffer()
            do { try channel.writeInbound(chunk) } catch let caught { error = caught }
            while let frame = try channel.readInbound(as: Frame.self) { frames.append(frame) }
        }
        _ = try? channel.close().wait()
        channel.embeddedEventLoop.run()
        if error == nil {
            do { try channel.throwIfErrorCaught() } catch let caught { error = caught }
        }
        while let frame = try channel.readInbound(as: Frame.self) { frames.append(frame) }
        return (frames, error)
    }

    @Test func passesOnTheSameFramesHoweverTheReadsSplitTheStream() throws {
        let hello = frameBytes(kind: FrameKind.hello.rawValue, body: Array("{}".utf8))
        let message = frameBytes(kind: FrameKind.message.rawValue, body: [0, 0, 1, 65, 1, 2, 3])
        let empty = frameBytes(kind: FrameKind.ping.rawValue, body: [])
        let large = frameBytes(kind: FrameKind.message.rawValue, body: (0..<900).map { UInt8($0 % 251) })
        var input = hello
        for _ in 0..<40 {
            input.writeImmutableBuffer(message)
            input.writeImmutableBuffer(empty)
            input.writeImmutableBuffer(large)
        }
        var expected = [Frame(kind: FrameKind.hello.rawValue, body: ByteBuffer(bytes: Array("{}".utf8)))]
        for _ in 0..<40 {
            expected.append(Frame(kind: FrameKind.message.rawValue, body: ByteBuffer(bytes: [0, 0, 1, 65, 1, 2, 3])))
            expected.append(Frame(kind: FrameKind.ping.rawValue, body: ByteBuffer()))
            expected.append(
                Frame(kind: FrameKind.message.rawValue, body: ByteBuffer(bytes: (0..<900).map { UInt8($0 % 251) })))
        }
        // Whole, byte by byte, in sizes that cut frames everywhere, and in reads larger than the 2 KiB after which
        // the reader moves an unfinished frame to the front of its buffer.
        for sizes in [[input.readableBytes], [1], [3, 7, 2], [4095, 1, 17], [5000, 2]] {
            let (frames, error) = try read(input, inReadsOf: sizes)
            #expect(error == nil, "reads of \(sizes)")
            #expect(frames == expected, "reads of \(sizes)")
        }
    }

    @Test func aFrameReadFromInsideAHandlerComesAfterTheFramesAlreadyRead() throws {
        /// Passes the frames on, and on the first one makes the channel read `more` (as a socket read would,
        /// re-entering the reader while it is still passing frames on).
        final class ReadsMoreOnce: ChannelInboundHandler {
            typealias InboundIn = Frame
            var more: ByteBuffer?
            var seen: [UInt8] = []
            init(more: ByteBuffer) { self.more = more }
            func channelRead(context: ChannelHandlerContext, data: NIOAny) {
                seen.append(unwrapInboundIn(data).kind)
                if let more = more.take() { context.pipeline.fireChannelRead(more) }
            }
        }
        var first = frameBytes(kind: 1, body: [])
        first.writeImmutableBuffer(frameBytes(kind: 2, body: []))
        first.writeBytes([0, 0, 0, 1])  // the start of frame 3
        var more = ByteBuffer(bytes: [3])
        more.writeImmutableBuffer(frameBytes(kind: 4, body: []))
        let handler = ReadsMoreOnce(more: more)
        let channel = EmbeddedChannel(handlers: [FrameReader(FrameDecoder(maxFrameSize: 64)), handler])
        try channel.writeInbound(first)
        #expect(handler.seen == [1, 2, 3, 4])
        _ = try? channel.finish()
    }

    @Test func refusesAnOversizeLengthBeforeBufferingTheBodyAndReadsNothingAfter() throws {
        var stream = frameBytes(kind: 1, body: Array("{}".utf8))  // past the handshake: a hello first
        stream.writeInteger(UInt32.max)  // 4 GiB announced, nothing sent
        stream.writeImmutableBuffer(frameBytes(kind: 2, body: []))  // a valid frame after it is not passed on
        let (frames, error) = try read(stream, inReadsOf: [stream.readableBytes], maxFrameSize: 1 << 20)
        #expect(frames.map(\.kind) == [1])
        #expect(
            error as? FrameDecodingError
                == FrameDecodingError(reason: .frameTooLarge(length: UInt32.max, limit: 1 << 20)))
    }

    @Test func theFirstFrameHasTheSmallHandshakeLimit() throws {
        var decoder = FrameDecoder(maxFrameSize: 1 << 20)
        var buffer = ByteBuffer()
        buffer.writeInteger(UInt32(WireFormat.maxHelloSize + 1))
        #expect(throws: FrameDecodingError.self) { _ = try decoder.decodeFrame(from: &buffer) }
    }

    @Test func anHTTPRequestIsNotAFrame() throws {
        // "GET " read as a length is 1.2 GB: refused at once, without waiting for more bytes.
        var decoder = FrameDecoder(maxFrameSize: 64 << 20)
        var buffer = ByteBuffer(string: "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(throws: FrameDecodingError.self) { _ = try decoder.decodeFrame(from: &buffer) }
    }

    @Test func refusesAZeroLength() throws {
        var decoder = FrameDecoder(maxFrameSize: 1024)
        var buffer = ByteBuffer(bytes: [0, 0, 0, 0])
        #expect(throws: FrameDecodingError(reason: .emptyFrame)) { _ = try decoder.decodeFrame(from: &buffer) }
    }

    @Test func reportsATruncatedFrameAtEndOfStream() throws {
        var partial = frameBytes(kind: 1, body: [])  // a whole frame, then 3 of a frame's 10 bytes
        partial.writeInteger(UInt32(10))
        partial.writeBytes([1, 2, 3])
        let (frames, error) = try read(partial, inReadsOf: [5, 3, 4])
        #expect(frames.map(\.kind) == [1])
        #expect(error as? FrameDecodingError == FrameDecodingError(reason: .truncatedFrame(missing: 7)))
        // Control: the same stream ending at a frame's end closes without an error.
        let (whole, none) = try read(frameBytes(kind: 1, body: [9]), inReadsOf: [2])
        #expect(whole.count == 1)
        #expect(none == nil)
    }

    @Test func waitsForTheRestOfAFrame() throws {
        var decoder = FrameDecoder(maxFrameSize: 1024)
        var buffer = ByteBuffer(bytes: [0, 0, 0, 3, 6])
        #expect(try decoder.decodeFrame(from: &buffer) == nil)
        #expect(buffer.readableBytes == 5)  // nothing consumed
        buffer.writeBytes([7, 8])
        let frame = try #require(try decoder.decodeFrame(from: &buffer))
        #expect(frame.kind == 6)
        #expect(Array(frame.body.readableBytesView) == [7, 8])
    }

    /// Garbage, half of it behind a length that more or less fits: each step yields a frame that took exactly its
    /// bytes, waits without taking any, or throws a `FrameDecodingError`; the parsers take what comes. Seeded, so that
    /// a failure repeats.
    @Test func randomGarbageNeverCrashes() {
        var generator = SeededRandomNumberGenerator(seed: 0xC41D_F00D)
        var outcomes = (frames: 0, waiting: 0, refused: 0)
        for _ in 0..<2000 {
            var decoder = FrameDecoder(maxFrameSize: 4096)
            let count = Int.random(in: 0...64, using: &generator)
            var buffer = ByteBuffer()
            if Bool.random(using: &generator) {
                buffer.writeInteger(UInt32.random(in: 0...UInt32(count + 4), using: &generator))
            }
            buffer.writeBytes((0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) })
            decoding: while true {
                let before = buffer.readableBytes
                do {
                    guard let frame = try decoder.decodeFrame(from: &buffer) else {
                        outcomes.waiting += 1
                        #expect(buffer.readableBytes == before, "a frame not yet whole took bytes")
                        break decoding
                    }
                    outcomes.frames += 1
                    #expect(buffer.readableBytes == before - 5 - frame.body.readableBytes, "length, kind, body")
                    _ = try? FrameParser.message(frame.body)
                    _ = try? FrameParser.request(frame.body)
                    _ = try? FrameParser.response(frame.body)
                    _ = try? Hello.parse(frame.body)
                } catch {
                    #expect(error is FrameDecodingError, "\(error)")
                    outcomes.refused += 1
                    break decoding
                }
            }
        }
        // The control: the garbage reaches each outcome many times, so the loop tests more than the first check.
        #expect(outcomes.frames > 100 && outcomes.waiting > 100 && outcomes.refused > 100, "\(outcomes)")
    }
}

@Suite(.timeLimit(.minutes(5))) struct FrameParserTests {
    @Test func messageRoundTrip() throws {
        let frame = try PayloadCoding.frame(
            ["a": 1], typeName: "test.dict", coder: JSONMessageCoder(), allocator: ByteBufferAllocator(), limit: 1024)
        var decoder = FrameDecoder(maxFrameSize: 1024, maxHelloSize: 1024)
        var buffer = frame
        let decoded = try #require(try decoder.decodeFrame(from: &buffer))
        #expect(decoded.knownKind == .message)
        let message = try FrameParser.message(decoded.body)
        #expect(message.typeName == "test.dict")
        #expect(message.flags.isEmpty)
        #expect(
            message.payload.getString(at: message.payload.readerIndex, length: message.payload.readableBytes)
                == #"{"a":1}"#)
    }

    @Test func dataTravelsAsRawBytes() throws {
        let data = Data([0, 1, 2, 255])
        var buffer = try PayloadCoding.frame(
            data, typeName: "blob", coder: JSONMessageCoder(), allocator: ByteBufferAllocator(), limit: 1024)
        var decoder = FrameDecoder(maxFrameSize: 1024, maxHelloSize: 1024)
        let frame = try #require(try decoder.decodeFrame(from: &buffer))
        let message = try FrameParser.message(frame.body)
        #expect(message.flags.contains(.binary))
        #expect(Array(message.payload.readableBytesView) == [0, 1, 2, 255])
        #expect(try PayloadCoding.decode(Data.self, from: message, coder: JSONMessageCoder()) == data)
        #expect(throws: PayloadError.self) {
            try PayloadCoding.decode(String.self, from: message, coder: JSONMessageCoder())
        }
    }

    @Test func requestAndResponseRoundTrip() throws {
        var request = try PayloadCoding.frame(
            "hi", requestID: 42, typeName: "greet", coder: JSONMessageCoder(), allocator: ByteBufferAllocator(),
            limit: 1024)
        var decoder = FrameDecoder(maxFrameSize: 1024, maxHelloSize: 1024)
        let requestFrame = try #require(try decoder.decodeFrame(from: &request))
        let parsed = try FrameParser.request(requestFrame.body)
        #expect(parsed.requestID == 42)
        #expect(parsed.message.typeName == "greet")

        var response = PayloadCoding.failureFrame(
            id: 42, status: .failed, typeName: "greet", message: "nope", allocator: ByteBufferAllocator())
        let responseFrame = try #require(try decoder.decodeFrame(from: &response))
        let reply = try FrameParser.response(responseFrame.body)
        #expect(reply.requestID == 42)
        #expect(reply.status == .failed)
        #expect(reply.message.payload.getString(at: reply.message.payload.readerIndex, length: 4) == "nope")
    }

    @Test(arguments: [
        [UInt8](),  // no header
        [0, 0],  // header cut short
        [0, 0, 0],  // empty type name
        [0, 0, 5, 65],  // name runs past the end
        [0, 0, 2, 0xff, 0xfe],  // not UTF-8
        [0, 0x10, 0x00]  // name longer than the limit (4096)
    ])
    func malformedMessagesAreErrors(_ bytes: [UInt8]) {
        #expect(throws: MalformedFrameError.self) { try FrameParser.message(ByteBuffer(bytes: bytes)) }
    }

    @Test func unknownResponseStatusIsAnError() {
        var body = ByteBuffer()
        body.writeInteger(UInt64(1))
        body.writeInteger(UInt8(99))
        body.writeBytes([0, 0, 1, 65])
        #expect(throws: MalformedFrameError.self) { try FrameParser.response(body) }
    }

    @Test func theProtocolDocumentsExampleIsWhatChirpSends() throws {
        struct Line: Encodable { var text: String }
        let frame = try PayloadCoding.frame(
            Line(text: "hi"), typeName: "chat.line", coder: JSONMessageCoder(), allocator: ByteBufferAllocator(),
            limit: 1024)
        let documented: [UInt8] = [
            0x00, 0x00, 0x00, 0x1a, 0x03, 0x00, 0x00, 0x09,
            0x63, 0x68, 0x61, 0x74, 0x2e, 0x6c, 0x69, 0x6e, 0x65,
            0x7b, 0x22, 0x74, 0x65, 0x78, 0x74, 0x22, 0x3a, 0x22, 0x68, 0x69, 0x22, 0x7d
        ]
        #expect(Array(frame.readableBytesView) == documented)
    }

    @Test func tooLargeMessagesAreRefusedBeforeSending() {
        #expect(throws: ChirpError.self) {
            try PayloadCoding.frame(
                String(repeating: "x", count: 5000), typeName: "big", coder: JSONMessageCoder(),
                allocator: ByteBufferAllocator(), limit: 1024)
        }
    }
}
