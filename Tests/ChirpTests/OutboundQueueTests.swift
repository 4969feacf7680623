import NIOCore
import Testing

@testable import Chirp
@testable import ChirpWire

/// The outbound queue of one connection: batching of small frames, and the memory it keeps between writes.
@Suite(.timeLimit(.minutes(5))) struct OutboundQueueTests {
    let allocator = ByteBufferAllocator()

    /// Any large spare the queue keeps.
    func takeAny(_ queue: inout OutboundQueue) -> ByteBuffer? { queue.takeSpareLarge(minimumCapacity: 1) }

    func frame(_ size: Int, byte: UInt8 = 0xAB) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: size)
        buffer.writeRepeatingByte(byte, count: size)
        return buffer
    }

    @Test func smallFramesShareOneChunkAndLargeOnesGoAsTheyAre() {
        var queue = OutboundQueue(limit: 64 << 20)
        #expect(queue.admit(frame(100), isReply: false, allocator: allocator) == .accepted)
        #expect(queue.admit(frame(200), isReply: false, allocator: allocator) == .accepted)
        #expect(queue.admit(frame(1 << 20), isReply: false, allocator: allocator) == .accepted)
        let first = queue.nextChunk()
        let second = queue.nextChunk()
        let third = queue.nextChunk()
        #expect(first?.readableBytes == 300)
        #expect(second?.readableBytes == 1 << 20)
        #expect(third == nil)
        #expect(queue.queuedBytes == 0)
    }

    /// `isFull(for:)` says what `admit` would: full exactly when the frame would be refused for room (a sender that
    /// does not wait asks it before copying a large payload into a frame).
    @Test func isFullSaysWhatAdmitWouldSayOfRoom() {
        var queue = OutboundQueue(limit: 3 << 20, splitsFrames: true)
        #expect(!queue.isFull(for: 8 << 20))  // an empty queue takes any frame
        #expect(queue.admit(frame(2 << 20), isReply: false, allocator: allocator) == .accepted)
        #expect(!queue.isFull(for: 1 << 20))
        #expect(queue.isFull(for: (1 << 20) + 1))
        #expect(queue.admit(frame((1 << 20) + 1), isReply: false, allocator: allocator) == .full)
        _ = queue.nextPart()  // a part leaves: room for it
        #expect(!queue.isFull(for: (1 << 20) + 1))
        #expect(queue.admit(frame((1 << 20) + 1), isReply: false, allocator: allocator) == .accepted)
        queue.retire()
        #expect(!queue.isFull(for: 8 << 20))  // a retired queue refuses for another reason, said by admit
    }

    @Test func aWrittenLargeFrameIsReusedWhileMoreIsQueuedAndLetGoWhenTheQueueEmpties() throws {
        var queue = OutboundQueue(limit: 64 << 20)
        #expect(queue.admit(frame(1 << 20), isReply: false, allocator: allocator) == .accepted)
        #expect(queue.admit(frame(1 << 20), isReply: false, allocator: allocator) == .accepted)
        let memory: UInt
        do {
            // (No #require here: Swift Testing keeps what it checks, and the memory would not be ours alone.)
            guard let written = queue.nextChunk() else {
                Issue.record("nothing to write")
                return
            }
            memory = written.withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress) }
            queue.recycleLarge(written)  // the second frame is still queued: a burst goes on
        }  // NIO let go of it
        // Control: a spare too small for the frame is not handed out.
        let tooSmall = queue.takeSpareLarge(minimumCapacity: 2 << 20)
        #expect(tooSmall == nil)
        guard var reused = queue.takeSpareLarge(minimumCapacity: 1 << 20) else {
            Issue.record("the written frame was not kept")
            return
        }
        #expect(reused.readableBytes == 0)
        reused.writeRepeatingByte(0x01, count: 1 << 20)
        #expect(reused.withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress) } == memory)  // no new memory
        #expect(takeAny(&queue) == nil)  // handed out once

        // The burst ends: what is written after the queue emptied, or kept before, is let go.
        let lastChunk = queue.nextChunk()
        let last = try #require(lastChunk)
        queue.recycleLarge(last)
        #expect(takeAny(&queue) == nil)
        #expect(queue.admit(frame(1 << 20), isReply: false, allocator: allocator) == .accepted)
        queue.recycleLarge(frame(1 << 20))
        _ = queue.nextChunk()
        queue.drainedEmpty()
        #expect(takeAny(&queue) == nil)
    }

    @Test func atMostFourLargeFramesAreKeptAndNoneOnceClosed() {
        var queue = OutboundQueue(limit: 64 << 20)
        #expect(queue.admit(frame(1 << 20), isReply: false, allocator: allocator) == .accepted)
        for _ in 0..<6 { queue.recycleLarge(frame(1 << 20)) }
        var kept = 0
        while queue.takeSpareLarge(minimumCapacity: 1) != nil { kept += 1 }
        #expect(kept == OutboundQueue.maximumLargeSpares)
        queue.recycleLarge(frame(1 << 20))
        _ = queue.close()
        #expect(takeAny(&queue) == nil)
        // Small chunks are not kept as large spares.
        var open = OutboundQueue(limit: 64 << 20)
        #expect(open.admit(frame(1 << 20), isReply: false, allocator: allocator) == .accepted)
        open.recycleLarge(frame(16 << 10))
        #expect(takeAny(&open) == nil)
    }

    /// The burst linger's rule (``Configuration/burstLinger``): a drain that wrote a burst keeps the drain counted as
    /// scheduled, so senders queue without waking the event loop; only for a burst, once until the linger ends, only
    /// when configured, and not on a closed queue.
    /// The byte stream's two positions: where the last frame queued ends, and how much was handed to the channel;
    /// a close drops what is queued without moving the second (those bytes never reached the socket).
    @Test func theStreamPositionsCountQueuedAndHandedOverBytesAcrossTheClose() {
        var queue = OutboundQueue(limit: 64 << 20)
        _ = queue.admit(frame(100), isReply: false, allocator: allocator)
        #expect(queue.queuedThrough == 100 && queue.handedOverThrough == 0)
        _ = queue.admit(.ping, bodySize: 8, allocator: allocator) { $0.writeInteger(UInt64(1)) }
        #expect(queue.queuedThrough == 113)  // the ping: 4 + 1 + 8 bytes
        _ = queue.nextChunk()
        #expect(queue.handedOverThrough == 113)
        _ = queue.admit(frame(1 << 20), isReply: false, allocator: allocator)
        #expect(queue.queuedThrough == 113 + (1 << 20))
        _ = queue.close()
        #expect(queue.admit(frame(10), isReply: false, allocator: allocator) == .closed)
        #expect(queue.queuedThrough == 113 + (1 << 20) && queue.handedOverThrough == 113)
    }

    @Test func aDrainThatWroteABurstLingersOnceAndOnlyThen() {
        func linger(_ queue: inout OutboundQueue, _ frames: Int, configured: Bool = true) -> Bool {
            queue.lingers(afterWriting: frames, lingerConfigured: configured)
        }
        let burst = Configuration.burstFrameCount
        var queue = OutboundQueue(limit: 64 << 20)
        // Fewer frames than a burst: no linger (the control for the next case).
        #expect(!linger(&queue, burst - 1))
        #expect(!queue.drainScheduled && !queue.lingerPending)
        // A burst: the linger's drain counts as scheduled.
        #expect(linger(&queue, burst))
        #expect(queue.drainScheduled && queue.lingerPending)
        // A drain is scheduled already (the linger's, or a sender's): no second one.
        #expect(!linger(&queue, burst * 4))
        // One is pending: none, even once another drain ended the scheduled one.
        queue.drainScheduled = false
        #expect(!linger(&queue, burst * 4))
        #expect(!queue.drainScheduled)
        // The linger ended: the next burst lingers again.
        queue.lingerEnded()
        #expect(linger(&queue, burst))
        // A linger that could not be scheduled counts on no drain.
        queue.lingerNotScheduled()
        #expect(!queue.drainScheduled && !queue.lingerPending)
        // None configured: none.
        #expect(!linger(&queue, burst * 4, configured: false))
        #expect(!queue.drainScheduled)
        // A closed queue writes nothing more: none.
        _ = queue.close()
        #expect(!linger(&queue, burst * 4))
        #expect(!queue.drainScheduled)
    }

    /// The hold across a tie-break switch (``PeerConnection/holdOutbound(until:)``) is the queue's: started once,
    /// ended once.
    @Test func aHoldStartsOnceAndEndsOnce() {
        var queue = OutboundQueue(limit: 1024)
        #expect(queue.releaseHold() == false)  // nothing held: nothing to end
        #expect(queue.hold() == true)
        #expect(queue.isHeld)
        #expect(queue.hold() == false)  // held already
        #expect(queue.releaseHold() == true)
        #expect(!queue.isHeld)
        #expect(queue.releaseHold() == false)
    }

    /// A sender's task cancelled after it took its waiter id but before it registered its wait (the window of
    /// `PeerConnection.waitForRoom()`) does not wait: the queue remembered the cancellation.
    @Test func aCancellationBeforeTheWaitIsRegisteredIsRemembered() async {
        var queue = OutboundQueue(limit: 1024)
        #expect(queue.admit(frame(900), isReply: false, allocator: allocator) == .accepted)  // over half full
        let cancelled = queue.makeWaiterID()
        #expect(queue.cancelWaiter(cancelled) == nil)  // not waiting yet: nothing to resume
        var waits = true
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            waits = queue.wait(continuation, id: cancelled)
            if !waits { continuation.resume() }
        }
        #expect(!waits)
        // The control: a waiter not cancelled waits, and its cancellation then hands back its continuation.
        let control = queue.makeWaiterID()
        var controlWaits = false
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            controlWaits = queue.wait(continuation, id: control)
            if !controlWaits { continuation.resume() }
            queue.cancelWaiter(control)?.resume()
        }
        #expect(controlWaits)
        #expect(queue.close().isEmpty)  // no waiter left behind
    }
}
