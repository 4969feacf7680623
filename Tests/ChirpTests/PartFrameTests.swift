import ChirpWire
import NIOCore
import NIOEmbedded
import Testing

@testable import Chirp

/// Large frames in parts (Docs/Protocol.md section 3): the sender's ``PartScheduler`` and the receiver's
/// ``PartAssembler`` as state machines, the queue that puts small frames first, and the documented example.
@Suite(.timeLimit(.minutes(1))) struct PartFrameTests {
    /// A complete frame of `kind` whose body is `bodySize` bytes of `fill`.
    static func frame(kind: FrameKind = .message, bodySize: Int, fill: UInt8 = 0xAB) -> ByteBuffer {
        var buffer = ByteBuffer()
        FrameWriter.write(kind, into: &buffer) { $0.writeRepeatingByte(fill, count: bodySize) }
        return buffer
    }

    /// The body of a part frame (what follows its kind byte).
    static func partBody(stream: UInt32, flags: UInt8, _ bytes: ByteBuffer) -> ByteBuffer {
        var body = ByteBuffer()
        body.writeInteger(stream)
        body.writeInteger(flags)
        body.writeImmutableBuffer(bytes)
        return body
    }

    /// The parts `scheduler` gives until it has none.
    static func drainParts(_ scheduler: inout PartScheduler) -> [PartScheduler.Part] {
        var parts: [PartScheduler.Part] = []
        while let part = scheduler.nextPart() { parts.append(part) }
        return parts
    }

    /// `length` bytes of `buffer` from `offset` (empty when it is shorter).
    static func slice(_ buffer: ByteBuffer, _ offset: Int, _ length: Int) -> ByteBuffer {
        buffer.getSlice(at: buffer.readerIndex + offset, length: length) ?? ByteBuffer()
    }

    // MARK: - The documented example

    @Test func theProtocolDocumentsPartExampleIsWhatChirpSendsAndReassembles() throws {
        // The chat line of section 5 (30 bytes), cut into parts of 16 bytes (Chirp's parts are 128 KiB).
        let whole: [UInt8] = [
            0x00, 0x00, 0x00, 0x1a, 0x03, 0x00, 0x00, 0x09,
            0x63, 0x68, 0x61, 0x74, 0x2e, 0x6c, 0x69, 0x6e, 0x65,
            0x7b, 0x22, 0x74, 0x65, 0x78, 0x74, 0x22, 0x3a, 0x22, 0x68, 0x69, 0x22, 0x7d
        ]
        let documented: [[UInt8]] = [
            [0x00, 0x00, 0x00, 0x16, 0x09, 0x00, 0x00, 0x00, 0x00, 0x01]
                + [0x00, 0x00, 0x00, 0x1a, 0x03, 0x00, 0x00, 0x09, 0x63, 0x68, 0x61, 0x74, 0x2e, 0x6c, 0x69, 0x6e],
            [0x00, 0x00, 0x00, 0x14, 0x09, 0x00, 0x00, 0x00, 0x00, 0x02]
                + [0x65, 0x7b, 0x22, 0x74, 0x65, 0x78, 0x74, 0x22, 0x3a, 0x22, 0x68, 0x69, 0x22, 0x7d]
        ]
        var scheduler = PartScheduler(partSize: 16)
        _ = scheduler.add(ByteBuffer(bytes: whole))
        var sent: [[UInt8]] = []
        while let part = scheduler.nextPart() {
            var frame = ByteBuffer()
            PartFrame.writeHeader(
                stream: part.stream, flags: part.flags, sliceSize: part.slice.readableBytes, into: &frame)
            frame.writeImmutableBuffer(part.slice)
            sent.append(Array(frame.readableBytesView))
        }
        #expect(sent == documented)
        // The receiver's side: each part frame's body (after length and kind) gives back the frame.
        var assembler = PartAssembler(maxFrameSize: 1024)
        #expect(try assembler.add(ByteBuffer(bytes: documented[0].dropFirst(5))) == nil)
        let frame = try #require(try assembler.add(ByteBuffer(bytes: documented[1].dropFirst(5))))
        #expect(frame.knownKind == .message)
        #expect(Array(frame.body.readableBytesView) == Array(whole.dropFirst(5)))
        #expect(assembler.openStreams == 0 && assembler.declaredBytes == 0)
    }

    // MARK: - The sender: PartScheduler

    @Test func aFrameLeavesInPartsOfAtMostThePartSizeFirstAndLastFlagged() {
        var scheduler = PartScheduler(partSize: 100)
        let frame = Self.frame(bodySize: 245)  // 250 bytes with its length and kind
        #expect(scheduler.add(frame) == 1)
        #expect(scheduler.startedThrough == 0)
        let parts = Self.drainParts(&scheduler)
        #expect(parts.map(\.slice.readableBytes) == [100, 100, 50])
        #expect(parts.map(\.flags) == [PartFrame.first, 0, PartFrame.last])
        var joined = ByteBuffer()
        for part in parts { joined.writeImmutableBuffer(part.slice) }
        #expect(joined == frame)
        #expect(scheduler.startedThrough == 1)
        #expect(scheduler.isEmpty)
    }

    @Test func largeFramesTakeTurnsAndStartInTheOrderTheyWereAdded() {
        var scheduler = PartScheduler(partSize: 100)
        _ = scheduler.add(Self.frame(bodySize: 295))  // 3 parts
        let first = scheduler.nextPart()
        _ = scheduler.add(Self.frame(bodySize: 195))  // 2 parts, added after the first part went
        #expect(first?.stream == 0)
        #expect(scheduler.startedThrough == 1)
        let rest = Self.drainParts(&scheduler)
        #expect(rest.map(\.stream) == [0, 1, 0, 1])  // round-robin, the new one after the one whose turn it was
        #expect(rest.map(\.flags) == [0, PartFrame.first, PartFrame.last, PartFrame.last])
        #expect(scheduler.startedThrough == 2)
    }

    @Test func aFrameNoLargerThanTheCallerSaysLeavesWholeUnlessItsFirstPartLeftAlready() {
        var scheduler = PartScheduler(partSize: 100)
        _ = scheduler.add(Self.frame(bodySize: 295))  // 300 bytes: 3 parts
        _ = scheduler.add(Self.frame(bodySize: 245))  // 250 bytes
        let first = scheduler.nextPart(wholeUpTo: 0)
        #expect(first?.isWhole == false)
        #expect(first?.slice.readableBytes == 100)
        #expect(scheduler.startedThrough == 1)
        // The second frame's turn: it fits, so it leaves whole, as it would travel without parts.
        let second = scheduler.nextPart(wholeUpTo: 250)
        #expect(second?.isWhole == true)
        #expect(second?.slice == Self.frame(bodySize: 245))
        #expect(second?.completes == Self.frame(bodySize: 245))
        #expect(scheduler.startedThrough == 2)
        // The first one started in parts: it ends in parts, whatever the caller allows.
        let rest = [scheduler.nextPart(wholeUpTo: 1000), scheduler.nextPart(wholeUpTo: 1000)]
        #expect(rest.map { $0?.isWhole } == [false, false])
        #expect(rest.map { $0?.slice.readableBytes } == [100, 100])
        #expect(scheduler.nextPart(wholeUpTo: 1000) == nil)
        #expect(scheduler.isEmpty)
    }

    @Test func atMostFourStreamsAreOpenTheRestWaitInOrder() {
        var scheduler = PartScheduler(partSize: 100)
        for _ in 0..<6 { _ = scheduler.add(Self.frame(bodySize: 195)) }  // 2 parts each
        let parts = Self.drainParts(&scheduler)
        // Streams 0-3 take turns; 4 opens when 0 is done, 5 when 1 is, each after the streams open then.
        #expect(parts.map(\.stream) == [0, 1, 2, 3, 0, 1, 2, 3, 4, 5, 4, 5])
        // Never more than four open at once, as the receiver requires.
        var open = Set<UInt32>()
        var most = 0
        for part in parts {
            if part.flags & PartFrame.first != 0 { open.insert(part.stream) }
            most = max(most, open.count)
            if part.flags & PartFrame.last != 0 { open.remove(part.stream) }
        }
        #expect(most == PartFrame.maximumOpenStreams)
    }

    // MARK: - The queue: small frames first, and what a request's frame tells at the close

    @Test func smallFramesQueuedAfterALargeOneGoAheadOfItsRemainingParts() {
        var queue = OutboundQueue(limit: 64 << 20, splitsFrames: true)
        let allocator = ByteBufferAllocator()
        #expect(queue.admit(Self.frame(bodySize: 100), isReply: false, allocator: allocator) == .accepted)
        #expect(queue.admit(Self.frame(bodySize: 1 << 20), isReply: false, allocator: allocator) == .accepted)
        #expect(queue.nextChunk()?.readableBytes == 105)  // what came before the large frame
        #expect(queue.nextChunk() == nil)
        let firstPart = queue.nextPart()
        #expect(firstPart?.flags == PartFrame.first)
        #expect(queue.admit(Self.frame(bodySize: 10), isReply: false, allocator: allocator) == .accepted)
        #expect(queue.nextChunk()?.readableBytes == 15)  // the small one now, before the second part
        #expect(queue.nextPart()?.flags == 0)
        // Control: a queue whose peer does not reassemble parts sends the large frame whole, in order.
        var whole = OutboundQueue(limit: 64 << 20, splitsFrames: false)
        _ = whole.admit(Self.frame(bodySize: 1 << 20), isReply: false, allocator: allocator)
        _ = whole.admit(Self.frame(bodySize: 10), isReply: false, allocator: allocator)
        #expect(whole.nextChunk()?.readableBytes == 5 + (1 << 20))
        #expect(whole.nextPart() == nil)
    }

    @Test func aSplitRequestCountsAsSentFromItsFirstPartAndASmallOneAfterItOnItsOwn() {
        var queue = OutboundQueue(limit: 64 << 20, splitsFrames: true)
        let allocator = ByteBufferAllocator()
        let large = Self.frame(kind: .request, bodySize: 1 << 20)
        _ = queue.admit(large, isReply: false, allocator: allocator)
        let largeMark = queue.endMark(ofFrameSized: large.readableBytes)
        let small = Self.frame(kind: .request, bodySize: 50)
        _ = queue.admit(small, isReply: false, allocator: allocator)
        let smallMark = queue.endMark(ofFrameSized: small.readableBytes)
        #expect(!queue.handedOver.includes(largeMark) && !queue.handedOver.includes(smallMark))
        _ = queue.nextChunk()  // the small request, ahead of the large one
        #expect(queue.handedOver.includes(smallMark))
        #expect(!queue.handedOver.includes(largeMark))  // not a byte of it went: it may be sent again
        _ = queue.nextPart()
        #expect(queue.handedOver.includes(largeMark))  // its first part went: the peer may run it
        #expect(!queue.handedOver.includes(.max))  // a frame never queued
    }

    /// A sink that stops taking writes once 64 KiB wait for the flush, as NIO's channel does with its default high
    /// watermark, and takes them again after the flush (the kernel took them).
    final class WatermarkSink: OutboundSink {
        let loop = EmbeddedEventLoop()
        var eventLoop: any EventLoop { loop }
        var pending = 0
        var writes: [Int] = []
        var promises: [EventLoopPromise<Void>] = []
        var isWritable: Bool { pending <= 64 * 1024 }
        var now = NIODeadline.uptimeNanoseconds(0)
        func write(_ chunk: ByteBuffer, promise: EventLoopPromise<Void>?) {
            pending += chunk.readableBytes
            writes.append(chunk.readableBytes)
            if let promise { promises.append(promise) }
        }
        func flush() { pending = 0 }
        deinit {
            for promise in promises { promise.succeed() }
        }
    }

    @Test func aDrainWritesOnePartAtATimeAndWhatWasQueuedMeanwhileBeforeTheNext() {
        let outbound = ConnectionOutbound(limit: 64 << 20, allocator: ByteBufferAllocator(), splitsFrames: true)
        let sink = WatermarkSink()
        let header = PartFrame.headerSize
        _ = outbound.admit(Self.frame(bodySize: 300 * 1024), isReply: false)  // 307,205 bytes: 3 parts
        _ = outbound.drain(to: sink, lingerConfigured: false)
        #expect(sink.writes == [header, 128 * 1024])  // the first part, then the channel is full
        _ = outbound.admit(Self.frame(bodySize: 95), isReply: false)
        _ = outbound.drain(to: sink, lingerConfigured: false)
        #expect(sink.writes.dropFirst(2) == [100, header, 128 * 1024])  // the small frame first
        let drained = outbound.drain(to: sink, lingerConfigured: false)
        #expect(sink.writes.dropFirst(5) == [header, 307_205 - 256 * 1024])
        #expect(drained.bytes == header + 307_205 - 256 * 1024)
        #expect(sink.promises.count == 1)  // the frame's memory may serve the next one once its last part is written
        #expect(outbound.drain(to: sink, lingerConfigured: false).bytes == 0)
    }

    @Test func aDrainWritesMorePartsOnlyWhereTheLinkTookThemFastOverTenMilliseconds() {
        let start = NIODeadline.uptimeNanoseconds(0)
        // Fast: a part every 100 µs for 10 ms (10 parts per millisecond): the most, 8 parts per drain.
        var fast = PartBudget(partSize: 1000)
        #expect(fast.bytes == 1000)
        #expect(fast.unsentLimit == PartBudget.slowLinkUnsentLimit)  // bounded until measured
        for step in 0...100 { fast.drained(1000, at: start + .microseconds(100 * Int64(step))) }
        #expect(fast.bytes == 8000)
        #expect(fast.wholeFrameBytes == 10_000)  // what the link carries in a millisecond leaves whole
        #expect(fast.unsentLimit == 0)  // more than a part per millisecond: no bound
        // Measured at 6 parts per millisecond next: 6 parts a drain, but frames up to 10 parts still leave whole (the
        // speed is not below half).
        var dipped = fast
        for step in 1...60 { dipped.drained(1000, at: start + .microseconds(10_000 + 1000 * Int64(step) / 6)) }
        #expect(dipped.bytes == 6000)
        #expect(dipped.wholeFrameBytes == 10_000)
        // Then the link slows: one part in the next 20 ms, and the budget is one part again.
        fast.drained(1000, at: start + .milliseconds(30))
        #expect(fast.bytes == 1000)
        #expect(fast.unsentLimit == PartBudget.slowLinkUnsentLimit)
        // Three parts per millisecond: three.
        var medium = PartBudget(partSize: 1000)
        for step in 0...10 { medium.drained(3000, at: start + .milliseconds(Int64(step))) }
        #expect(medium.bytes == 3000)
        // A slow link whose kernel takes four parts at once (its congestion window), then one per 100 ms: one part.
        var slow = PartBudget()
        for step in 0..<4 {
            slow.drained(PartFrame.headerSize + PartFrame.partSize, at: start + .microseconds(20 * Int64(step)))
        }
        slow.drained(PartFrame.headerSize + PartFrame.partSize, at: start + .milliseconds(10))
        #expect(slow.bytes == PartFrame.partSize)
        slow.drained(PartFrame.headerSize + PartFrame.partSize, at: start + .milliseconds(110))
        #expect(slow.bytes == PartFrame.partSize)
        #expect(slow.wholeFrameBytes < PartFrame.partSize)
        #expect(slow.unsentLimit == PartBudget.slowLinkUnsentLimit)
    }

    @Test func aPauseAfterTheQueueEmptiedIsNotCountedAsASlowLink() {
        let start = NIODeadline.uptimeNanoseconds(0)
        // Fast for 10 ms (10 parts per millisecond), a drain that writes the last of the queue, 50 ms of pause, then
        // drains again: the speed measured before the pause stands.
        func afterAPause(lastDrainEmptied: Bool) -> PartBudget {
            var budget = PartBudget(partSize: 1000)
            for step in 0...100 { budget.drained(1000, at: start + .microseconds(100 * Int64(step))) }
            budget.drained(1000, at: start + .microseconds(10_100), emptied: lastDrainEmptied)
            for step in 0...5 {
                budget.drained(1000, at: start + .milliseconds(60) + .microseconds(100 * Int64(step)))
            }
            return budget
        }
        let paused = afterAPause(lastDrainEmptied: true)
        #expect(paused.bytes == 8000)
        #expect(paused.wholeFrameBytes == 10_000)
        #expect(paused.unsentLimit == 0)
        // Control: the same 50 ms with frames still queued are the link's, and say it slowed.
        let stalled = afterAPause(lastDrainEmptied: false)
        #expect(stalled.bytes == 1000)
        #expect(stalled.wholeFrameBytes < 1000)
        #expect(stalled.unsentLimit == PartBudget.slowLinkUnsentLimit)
    }

    @Test func onAFastLinkADrainWritesSeveralPartsPastTheWritability() {
        let outbound = ConnectionOutbound(limit: 64 << 20, allocator: ByteBufferAllocator(), splitsFrames: true)
        let sink = WatermarkSink()
        let header = PartFrame.headerSize
        for _ in 0..<4 { _ = outbound.admit(Self.frame(bodySize: 1 << 20), isReply: false) }  // 36 parts
        // A drain every 500 µs, one part each (the channel is full after it), for 10 ms: two parts per millisecond.
        for step in 0...20 {
            sink.now = .uptimeNanoseconds(0) + .microseconds(500 * Int64(step))
            _ = outbound.drain(to: sink, lingerConfigured: false)
        }
        #expect(sink.writes == Array(repeating: [header, 128 * 1024], count: 21).flatMap { $0 })
        sink.writes = []
        sink.now = sink.now + .microseconds(500)
        _ = outbound.drain(to: sink, lingerConfigured: false)
        #expect(sink.writes == [header, 128 * 1024, header, 128 * 1024])  // two parts, the second past the writability
    }

    /// Has `outbound` measure a fast link: a 40 MiB frame (321 parts) written by a drain every 500 µs for 40 ms,
    /// each as many parts as its budget allows (the sink is full after one), which grows every 10 ms (1, 2, 3, 5
    /// parts): 221 parts in all, the last 10 ms carrying 9.8 parts per millisecond (1.2 MiB). Returns the time of
    /// the last drain, and the changes of the socket's unsent bound the drains asked for.
    static func measureAFastLink(
        _ outbound: ConnectionOutbound, _ sink: WatermarkSink
    ) -> (last: NIODeadline, unsentLimits: [Int]) {
        _ = outbound.admit(Self.frame(bodySize: 40 << 20), isReply: false)
        var unsentLimits: [Int] = []
        for step in 0...80 {
            sink.now = .uptimeNanoseconds(0) + .microseconds(500 * Int64(step))
            if let limit = outbound.drain(to: sink, lingerConfigured: false).unsentLimit { unsentLimits.append(limit) }
        }
        return (sink.now, unsentLimits)
    }

    @Test func aFrameTheLinkCarriesWithinTheTargetLeavesWholeALargerOneInParts() {
        let header = PartFrame.headerSize
        let megabyteFrame = Self.frame(bodySize: 1 << 20).readableBytes
        // Before the link is measured, a frame of two parts leaves in parts.
        let unmeasured = ConnectionOutbound(limit: 64 << 20, allocator: ByteBufferAllocator(), splitsFrames: true)
        let unmeasuredSink = WatermarkSink()
        _ = unmeasured.admit(Self.frame(bodySize: 200 * 1024), isReply: false)
        #expect(unmeasured.drain(to: unmeasuredSink, lingerConfigured: false).unsentLimit == nil)
        #expect(unmeasuredSink.writes == [header, 128 * 1024])

        let outbound = ConnectionOutbound(limit: 64 << 20, allocator: ByteBufferAllocator(), splitsFrames: true)
        let sink = WatermarkSink()
        let (measured, unsentLimits) = Self.measureAFastLink(outbound, sink)
        #expect(sink.writes.count == 2 * 221)
        // The link took more than a part per millisecond from the first 10 ms on: the kernel's unsent bound goes.
        #expect(unsentLimits == [0])
        // A 1 MiB message after it: the large frame's next part (its turn), then the message whole, past the
        // writability, as the next parts would have been.
        _ = outbound.admit(Self.frame(bodySize: 1 << 20), isReply: false)
        sink.writes = []
        sink.now = measured + .microseconds(500)
        _ = outbound.drain(to: sink, lingerConfigured: false)
        #expect(sink.writes == [header, 128 * 1024, megabyteFrame])

        // A 4 MiB message is more than the link carries in a millisecond: it leaves in parts.
        let slower = ConnectionOutbound(limit: 64 << 20, allocator: ByteBufferAllocator(), splitsFrames: true)
        let slowerSink = WatermarkSink()
        _ = Self.measureAFastLink(slower, slowerSink)
        _ = slower.admit(Self.frame(bodySize: 4 << 20), isReply: false)
        slowerSink.writes = []
        while slower.drain(to: slowerSink, lingerConfigured: false).bytes > 0 {}
        #expect(slowerSink.writes.count > 2 * 32)
        #expect(slowerSink.writes.allSatisfy { $0 <= 128 * 1024 })
    }

    // MARK: - The receiver: PartAssembler

    /// Feeds `frame` to `assembler` in parts of `size` bytes as stream `stream`; returns what the last part gives.
    static func feed(
        _ frame: ByteBuffer, stream: UInt32, size: Int, to assembler: inout PartAssembler
    ) throws -> Frame? {
        var rest = frame
        var first = true
        var result: Frame?
        while rest.readableBytes > 0 {
            let slice = rest.readSlice(length: min(size, rest.readableBytes)) ?? ByteBuffer()
            let flags = (first ? PartFrame.first : 0) | (rest.readableBytes == 0 ? PartFrame.last : 0)
            first = false
            result = try assembler.add(Self.partBody(stream: stream, flags: flags, slice))
        }
        return result
    }

    @Test func interleavedStreamsAreReassembledEachWhenItsLastPartArrives() throws {
        var assembler = PartAssembler(maxFrameSize: 1 << 20)
        let a = Self.frame(bodySize: 300, fill: 1)
        let b = Self.frame(kind: .response, bodySize: 150, fill: 2)
        #expect(try assembler.add(Self.partBody(stream: 7, flags: PartFrame.first, Self.slice(a, 0, 200))) == nil)
        #expect(try assembler.add(Self.partBody(stream: 9, flags: PartFrame.first, Self.slice(b, 0, 100))) == nil)
        #expect(assembler.openStreams == 2 && assembler.declaredBytes == 301 + 151)
        let bDone = try #require(
            try assembler.add(Self.partBody(stream: 9, flags: PartFrame.last, Self.slice(b, 100, 55))))
        #expect(bDone.knownKind == .response && bDone.body.readableBytes == 150)
        let aDone = try #require(
            try assembler.add(Self.partBody(stream: 7, flags: PartFrame.last, Self.slice(a, 200, 105))))
        #expect(aDone.knownKind == .message && aDone.body == ByteBuffer(repeating: 1, count: 300))
        #expect(assembler.openStreams == 0 && assembler.declaredBytes == 0)
        // A stream id may serve again once its stream closed.
        #expect(try Self.feed(a, stream: 7, size: 64, to: &assembler)?.body.readableBytes == 300)
    }

    @Test func theNextFrameIsReassembledInTheMemoryOfTheLastOnceItWasLetGo() throws {
        func address(_ frame: Frame) -> UInt? {
            frame.body.withUnsafeReadableBytes { $0.baseAddress.map { UInt(bitPattern: $0) } }
        }
        var assembler = PartAssembler(maxFrameSize: 1 << 20)
        let a = Self.frame(bodySize: 300_000, fill: 1)
        let b = Self.frame(bodySize: 200_000, fill: 2)
        var first = try #require(try Self.feed(a, stream: 1, size: 65_536, to: &assembler))
        let firstAddress = address(first)
        first = try #require(Frame(kindAndBody: ByteBuffer(bytes: [FrameKind.ping.rawValue])))  // let go
        let second = try #require(try Self.feed(b, stream: 2, size: 65_536, to: &assembler))
        #expect(address(second) == firstAddress)
        #expect(second.body == ByteBuffer(repeating: 2, count: 200_000))
        // Control: a frame still held keeps its bytes, and the next one gets memory of its own.
        let third = try #require(try Self.feed(a, stream: 3, size: 65_536, to: &assembler))
        #expect(address(third) != address(second))
        #expect(second.body == ByteBuffer(repeating: 2, count: 200_000))
        #expect(third.body == ByteBuffer(repeating: 1, count: 300_000))
        _ = first
    }

    /// Each way to break section 3's rules on parts, and the problem the receiver names before it closes.
    @Test func everyBrokenRuleThrowsAndNamesTheProblem() throws {
        func problem(_ steps: (inout PartAssembler) throws -> Void) -> String {
            var assembler = PartAssembler(maxFrameSize: 1000)
            do {
                try steps(&assembler)
                return "no error"
            } catch let error as PartError {
                return error.problem
            } catch {
                return "\(error)"
            }
        }
        let frame = Self.frame(bodySize: 95)  // 100 bytes
        let head = Self.slice(frame, 0, 50)
        #expect(problem { _ = try $0.add(ByteBuffer(bytes: [0, 0, 0])) }.contains("shorter than its stream id"))
        #expect(
            problem { _ = try $0.add(Self.partBody(stream: 1, flags: 0, head)) }
                == "a part of stream 1, which is not open")
        #expect(
            problem {
                _ = try $0.add(Self.partBody(stream: 1, flags: PartFrame.first, head))
                _ = try $0.add(Self.partBody(stream: 1, flags: PartFrame.first, head))
            } == "stream 1 opened twice")
        #expect(
            problem { _ = try $0.add(Self.partBody(stream: 1, flags: PartFrame.first, Self.frame(bodySize: 1000))) }
                .contains("over the limit of 1000"))
        #expect(
            problem {
                _ = try $0.add(Self.partBody(stream: 1, flags: PartFrame.first, ByteBuffer(bytes: [0, 0, 0, 9])))
            }
            .contains("shorter than a length and a kind"))
        #expect(
            problem {
                _ = try $0.add(Self.partBody(stream: 1, flags: PartFrame.first, Self.frame(kind: .part, bodySize: 20)))
            }
            .contains("kind 0x9"))
        #expect(
            problem {
                for stream in UInt32(0)..<5 {
                    _ = try $0.add(Self.partBody(stream: stream, flags: PartFrame.first, head))
                }
            } == "more than 4 streams open at once")
        #expect(
            problem {
                _ = try $0.add(Self.partBody(stream: 1, flags: PartFrame.first, head))
                _ = try $0.add(Self.partBody(stream: 1, flags: 0, frame))  // 50 + 100 > 100
            } == "stream 1 carries more than the 96 bytes it announced")
        #expect(
            problem {
                _ = try $0.add(Self.partBody(stream: 1, flags: PartFrame.first, head))
                _ = try $0.add(Self.partBody(stream: 1, flags: PartFrame.last, ByteBuffer(bytes: [1, 2])))
            } == "stream 1 ended after 48 of its 96 bytes")
        // Control: the same frame in parts that keep the rules.
        #expect(problem { _ = try Self.feed(frame, stream: 1, size: 50, to: &$0) } == "no error")
    }

    @Test func aFirstPartIsRefusedOnceTheOpenStreamsHoldTheBudget() throws {
        var assembler = PartAssembler(maxFrameSize: 128 << 20)
        var header = ByteBuffer()
        header.writeInteger(UInt32(PartFrame.openStreamsBudget))  // one frame of the whole budget, announced
        header.writeInteger(FrameKind.message.rawValue)
        _ = try assembler.add(Self.partBody(stream: 1, flags: PartFrame.first, header))
        #expect(throws: PartError.self) { try assembler.add(Self.partBody(stream: 2, flags: PartFrame.first, header)) }
        // Control: under the budget, a second stream opens.
        var under = PartAssembler(maxFrameSize: 128 << 20)
        var smaller = ByteBuffer()
        smaller.writeInteger(UInt32(PartFrame.openStreamsBudget - 1))
        smaller.writeInteger(FrameKind.message.rawValue)
        _ = try under.add(Self.partBody(stream: 1, flags: PartFrame.first, smaller))
        _ = try under.add(Self.partBody(stream: 2, flags: PartFrame.first, smaller))
        #expect(under.openStreams == 2)
    }
}
