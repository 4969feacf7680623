import Chirp
import Foundation
import NIOCore

#if os(Linux)
extension Harness {
    /// The JSON coder alone, on one thread: an upper bound for the small-message figures, which encode once on the
    /// sender and decode once on the receiver for every message.
    func codec() throws -> [Figure] {
        let coder = JSONMessageCoder()
        let allocator = ByteBufferAllocator()
        let count = options.quick ? 20_000 : 100_000
        var encodeNanos: [Double] = []
        var decodeNanos: [Double] = []
        var pairs: [Double] = []
        for run in 0...plan.runs {
            var buffers: [ByteBuffer] = []
            buffers.reserveCapacity(count)
            let start = nowNanos()
            for index in 0..<count {
                var buffer = allocator.buffer(capacity: 128)
                try coder.encode(Small.sample(index), into: &buffer)
                buffers.append(buffer)
            }
            let encoded = nowNanos()
            for buffer in buffers { _ = try coder.decode(Small.self, from: buffer) }
            let decoded = nowNanos()
            guard run > 0 else { continue }  // warm-up
            encodeNanos.append(Double(encoded - start) / Double(count))
            decodeNanos.append(Double(decoded - encoded) / Double(count))
            pairs.append(Double(count) / (Double(decoded - start) / 1e9))
        }
        var sample = allocator.buffer(capacity: 128)
        try coder.encode(Small.sample(0), into: &sample)
        return [Figure(
            name: "codec.json", title: "JSONMessageCoder: encode + decode of the small message, one thread", unit: "msg/s",
            samples: pairs,
            note: "\(sample.readableBytes)-byte JSON; encode \(formatNumber(Spread(encodeNanos).median)) ns, decode \(formatNumber(Spread(decodeNanos).median)) ns",
            details: ["encodeNanos": Spread(encodeNanos).median, "decodeNanos": Spread(decodeNanos).median,
                      "payloadBytes": Double(sample.readableBytes)])]
    }
}
#endif
