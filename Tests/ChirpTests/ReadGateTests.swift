import NIOCore
import NIOEmbedded
import Testing

@testable import Chirp

/// The read gate on a channel of its own: a closed gate holds the channel's reads back, and the last key to open it
/// lets the held read through.
@Suite(.timeLimit(.minutes(5))) struct ReadGateTests {
    /// Counts the reads that reach the head of the pipeline.
    final class ReadCounter: ChannelOutboundHandler {
        typealias OutboundIn = ByteBuffer
        var reads = 0
        func read(context: ChannelHandlerContext) {
            reads += 1
            context.read()
        }
    }

    @Test func aClosedGateHoldsReadsUntilEveryKeyOpensIt() throws {
        let counter = ReadCounter()
        let gate = ReadGate()
        let channel = EmbeddedChannel(handlers: [counter, gate])
        channel.read()
        #expect(counter.reads == 1)  // the positive control: an open gate lets reads through

        let first = ObjectIdentifier(ReadCounter.self)
        let second = ObjectIdentifier(ReadGate.self)
        gate.close(for: first)
        gate.close(for: second)
        channel.read()
        channel.read()
        #expect(counter.reads == 1)
        #expect(gate.isClosed)

        gate.open(for: first)
        #expect(counter.reads == 1)  // still closed by the second key
        gate.open(for: second)
        #expect(counter.reads == 2)  // the held reads, as one
        #expect(!gate.isClosed)
        _ = try channel.finish()
    }

    @Test func openingWithAnUnknownKeyDoesNothing() throws {
        let counter = ReadCounter()
        let gate = ReadGate()
        let channel = EmbeddedChannel(handlers: [counter, gate])
        gate.close(for: ObjectIdentifier(ReadGate.self))
        channel.read()
        gate.open(for: ObjectIdentifier(ReadCounter.self))
        #expect(counter.reads == 0)
        _ = try channel.finish()
    }

    @Test func aGateOpenedForGoodNeverClosesAgain() throws {
        let counter = ReadCounter()
        let gate = ReadGate()
        let channel = EmbeddedChannel(handlers: [counter, gate])
        let key = ObjectIdentifier(ReadCounter.self)
        gate.close(for: key)
        channel.read()
        #expect(counter.reads == 0)  // the positive control: it was closed
        gate.openForGood()
        #expect(counter.reads == 1)  // the held read goes through
        gate.close(for: key)
        channel.read()
        #expect(counter.reads == 2)
        #expect(!gate.isClosed)
        _ = try channel.finish()
    }
}
