import ChirpWire
import NIOCore
import NIOEmbedded
import Testing

@testable import Chirp

/// A connection's queue and its drain (``ConnectionOutbound``) against a recording sink: what is written, when the
/// flush comes, and when the event loop is to be woken, with no channel.
@Suite(.timeLimit(.minutes(1))) struct ConnectionOutboundTests {
    /// Records what a drain writes; writable or not as the test says.
    final class Recorder: OutboundSink {
        var isWritable = true
        let loop = EmbeddedEventLoop()
        var eventLoop: any EventLoop { loop }
        var writes: [ByteBuffer] = []
        var promises: [EventLoopPromise<Void>] = []
        var flushes = 0

        func write(_ chunk: ByteBuffer, promise: EventLoopPromise<Void>?) {
            writes.append(chunk)
            if let promise { promises.append(promise) }
        }

        func flush() { flushes += 1 }

        /// The writes NIO would complete: a promise left pending would be reported as leaked.
        deinit {
            for promise in promises { promise.succeed() }
        }

        /// The bytes written so far, in order.
        var bytes: Int { writes.reduce(0) { $0 + $1.readableBytes } }
    }

    static func frame(_ size: Int) -> ByteBuffer {
        ByteBuffer(repeating: 0xAB, count: size)
    }

    /// Queues a frame of `size` bytes: what became of it, and whether the event loop is to be woken for a drain.
    static func queue(_ size: Int, on outbound: ConnectionOutbound) -> String {
        let (admission, wakeLoop) = outbound.admit(frame(size), isReply: false)
        return "\(admission)" + (wakeLoop ? ", wake the loop" : "")
    }

    @Test func aDrainWritesEverythingQueuedFlushesOnceAndEndsTheScheduledDrain() {
        let outbound = ConnectionOutbound(limit: 64 << 20, allocator: ByteBufferAllocator())
        let sink = Recorder()
        #expect(Self.queue(100, on: outbound) == "accepted, wake the loop")  // the first wakes the loop
        #expect(Self.queue(100, on: outbound) == "accepted")  // the drain is scheduled
        #expect(Self.queue(1 << 20, on: outbound) == "accepted")
        let drained = outbound.drain(to: sink, lingerConfigured: false)
        #expect(drained == ConnectionOutbound.Drained(frames: 3, bytes: 200 + (1 << 20), lingers: false))
        #expect(sink.writes.map(\.readableBytes) == [200, 1 << 20])  // the small ones batched, the large one as it is
        #expect(sink.promises.count == 1)  // the large one's memory is recycled once written
        #expect(sink.flushes == 1)
        #expect(Self.queue(10, on: outbound) == "accepted, wake the loop")  // no drain scheduled now
        // Control: a drain with nothing to write flushes nothing.
        let empty = Recorder()
        #expect(outbound.drain(to: empty, lingerConfigured: false).bytes == 10)
        #expect(outbound.drain(to: empty, lingerConfigured: false) == ConnectionOutbound.Drained())
        #expect(empty.flushes == 1)
    }

    @Test func anUnwritableChannelGetsNothingAndWhatIsQueuedWaitsForTheNextDrain() {
        let outbound = ConnectionOutbound(limit: 64 << 20, allocator: ByteBufferAllocator())
        let sink = Recorder()
        sink.isWritable = false
        _ = outbound.admit(Self.frame(100), isReply: false)
        #expect(outbound.drain(to: sink, lingerConfigured: false).bytes == 0)
        #expect(sink.writes.isEmpty && sink.flushes == 0)
        #expect(Self.queue(100, on: outbound) == "accepted, wake the loop")  // the drain ended
        sink.isWritable = true
        #expect(outbound.drain(to: sink, lingerConfigured: false).bytes == 200)
        #expect(sink.flushes == 1)
    }

    @Test func aHeldQueueWritesNothingUntilTheHoldEnds() {
        let outbound = ConnectionOutbound(limit: 64 << 20, allocator: ByteBufferAllocator())
        let sink = Recorder()
        #expect(outbound.hold())
        _ = outbound.admit(Self.frame(100), isReply: false)
        #expect(outbound.drain(to: sink, lingerConfigured: true) == ConnectionOutbound.Drained())
        #expect(sink.writes.isEmpty)
        #expect(Self.queue(100, on: outbound) == "accepted, wake the loop")  // the drain ended
        #expect(outbound.releaseHold())
        // The frames queued during the hold are counted when they are written.
        #expect(
            outbound.drain(to: sink, lingerConfigured: true)
                == ConnectionOutbound.Drained(frames: 2, bytes: 200, lingers: false))
    }

    @Test func aBurstLingersAndTheSendersDoNotWakeTheLoopUntilTheLingerEnds() {
        let outbound = ConnectionOutbound(limit: 64 << 20, allocator: ByteBufferAllocator())
        let sink = Recorder()
        for _ in 0..<Configuration.burstFrameCount { _ = outbound.admit(Self.frame(10), isReply: false) }
        #expect(outbound.drain(to: sink, lingerConfigured: true).lingers)
        #expect(Self.queue(10, on: outbound) == "accepted")  // the linger's drain comes
        outbound.lingerEnded()
        #expect(
            outbound.drain(to: sink, lingerConfigured: true)
                == ConnectionOutbound.Drained(frames: 1, bytes: 10, lingers: false))
        #expect(Self.queue(10, on: outbound) == "accepted, wake the loop")
        // Control: with no linger configured, a burst does not linger.
        let eager = ConnectionOutbound(limit: 64 << 20, allocator: ByteBufferAllocator())
        for _ in 0..<Configuration.burstFrameCount { _ = eager.admit(Self.frame(10), isReply: false) }
        #expect(!eager.drain(to: sink, lingerConfigured: false).lingers)
    }

    @Test func aWrittenLargeFrameServesTheNextWhileMoreIsQueued() throws {
        let outbound = ConnectionOutbound(limit: 64 << 20, allocator: ByteBufferAllocator())
        let sink = Recorder()
        _ = outbound.admit(Self.frame(1 << 20), isReply: false)
        _ = outbound.drain(to: sink, lingerConfigured: false)
        _ = outbound.admit(Self.frame(1 << 20), isReply: false)  // a burst of large frames goes on
        #expect(outbound.takeSpareLarge(minimumCapacity: 1 << 20) == nil)  // not written yet
        sink.writes = []
        try #require(sink.promises.count == 1)
        sink.promises.removeFirst().succeed()
        sink.loop.run()
        #expect(outbound.takeSpareLarge(minimumCapacity: 1 << 20)?.capacity ?? 0 >= 1 << 20)
    }

    @Test func aSenderWaitingForRoomIsWokenByTheDrainThatMadeRoom() async {
        let outbound = ConnectionOutbound(limit: 1000, allocator: ByteBufferAllocator())
        #expect(outbound.admit(Self.frame(900), isReply: false).admission == .accepted)
        #expect(outbound.admit(Self.frame(200), isReply: false).admission == .full)
        async let waited: Void = outbound.waitForRoom()
        // The waiter may not be registered yet when the drain runs: it then sees the room itself.
        _ = outbound.drain(to: Recorder(), lingerConfigured: false)
        await waited
        #expect(outbound.admit(Self.frame(200), isReply: false).admission == .accepted)
    }

    /// A request's task cancelled before the event loop registered its wait: its frame is not queued, so no drain
    /// writes it; the frame of a wait registered in the same state is.
    @Test func aWaitCancelledBeforeItIsRegisteredQueuesNothing() {
        let outbound = ConnectionOutbound(limit: 64 << 20, allocator: ByteBufferAllocator())
        let (cancelled, sent) = outbound.withTickets { tickets in
            let cancelled = tickets.makeRequestID()
            tickets.waitStarting()
            return (cancelled, tickets.pingStarting())
        }
        outbound.withTickets { $0.waitCancelled(cancelled) }
        let refused = outbound.admitRegistered(id: cancelled) {
            $0.admit(Self.frame(10), isReply: false, allocator: $1)
        }
        #expect(refused == nil)
        let sink = Recorder()
        #expect(outbound.drain(to: sink, lingerConfigured: false) == ConnectionOutbound.Drained())
        #expect(sink.writes.isEmpty)
        // The control: the other wait's frame is queued and written.
        let accepted = outbound.admitRegistered(id: sent) { $0.admit(Self.frame(20), isReply: false, allocator: $1) }
        #expect(accepted == .accepted)
        #expect(outbound.drain(to: sink, lingerConfigured: false).bytes == 20)
        #expect(!outbound.withTickets { $0.hasUnfinishedExchanges })
    }

    /// A reply is no longer owed once it is handed to the queue, queued or refused (the connection closed): in the one
    /// step that queues it.
    @Test func aReplyIsNoLongerOwedOnceQueuedOrRefused() {
        let outbound = ConnectionOutbound(limit: 64 << 20, allocator: ByteBufferAllocator())
        outbound.withTickets { $0.owesReply() }
        outbound.withTickets { $0.owesReply() }
        #expect(outbound.admit(Self.frame(10), isReply: true).admission == .accepted)
        #expect(outbound.withTickets { $0.repliesOwed } == 1)
        // A message is no reply: what is owed stays owed.
        #expect(outbound.admit(Self.frame(10), isReply: false).admission == .accepted)
        #expect(outbound.withTickets { $0.repliesOwed } == 1)
        outbound.close()
        #expect(outbound.admit(Self.frame(10), isReply: true).admission == .closed)
        #expect(!outbound.withTickets { $0.hasUnfinishedExchanges })
    }
}
