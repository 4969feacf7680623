import Chirp
import Foundation
import NIOCore
import NIOFoundationCompat

#if os(Linux)
extension Harness {
    /// The JSON coder alone, on one thread: an upper bound for the small-message figures, which encode once on the
    /// sender and decode once on the receiver for every message. Reference: Foundation's `JSONEncoder` and
    /// `JSONDecoder` (reused, as `JSONMessageCoder` used them before its fast path) on the same message.
    func codec() throws -> [Figure] {
        let count = options.quick ? 20_000 : 100_000
        let coder = JSONMessageCoder()
        let chirp = try measureCoder(
            count: count, encode: { value, buffer in try coder.encode(value, into: &buffer) },
            decode: { buffer in try coder.decode(Small.self, from: buffer) })
        let encoder = JSONEncoder()
        let decoder = JSONDecoder()
        let foundation = try measureCoder(
            count: count, encode: { value, buffer in try buffer.writeJSONEncodable(value, encoder: encoder) },
            decode: { buffer in try decoder.decode(Small.self, from: buffer) })
        var sample = ByteBufferAllocator().buffer(capacity: 128)
        try coder.encode(Small.sample(0), into: &sample)
        return [
            Figure(
                name: "codec.json",
                title:
                    "JSONMessageCoder: encode + decode of the small message, one thread (per second of its CPU time)",
                unit: "msg/s",
                samples: chirp.pairs,
                reference: .init(
                    name: "foundation-JSONEncoder+JSONDecoder", value: Spread(foundation.pairs).median,
                    spread: Spread(foundation.pairs)),
                note:
                    "\(sample.readableBytes)-byte JSON; encode \(formatNumber(Spread(chirp.encode).median)) ns, decode \(formatNumber(Spread(chirp.decode).median)) ns; "
                    + "Foundation: encode \(formatNumber(Spread(foundation.encode).median)) ns, decode \(formatNumber(Spread(foundation.decode).median)) ns",
                details: [
                    "encodeNanos": Spread(chirp.encode).median, "decodeNanos": Spread(chirp.decode).median,
                    "foundationEncodeNanos": Spread(foundation.encode).median,
                    "foundationDecodeNanos": Spread(foundation.decode).median,
                    "payloadBytes": Double(sample.readableBytes)
                ])
        ]
    }

    /// Nanoseconds per encode and per decode, and encode+decode pairs per second, one sample per run; in thread CPU
    /// time, so that other processes on a shared machine do not count.
    private func measureCoder(
        count: Int, encode: (Small, inout ByteBuffer) throws -> Void, decode: (ByteBuffer) throws -> Small
    ) throws -> (encode: [Double], decode: [Double], pairs: [Double]) {
        let allocator = ByteBufferAllocator()
        var encodeNanos: [Double] = []
        var decodeNanos: [Double] = []
        var pairs: [Double] = []
        for run in 0...plan.runs {
            var buffers: [ByteBuffer] = []
            buffers.reserveCapacity(count)
            let start = threadCPUNanos()
            for index in 0..<count {
                var buffer = allocator.buffer(capacity: 128)
                try encode(Small.sample(index), &buffer)
                buffers.append(buffer)
            }
            let encoded = threadCPUNanos()
            for (index, buffer) in buffers.enumerated() {
                guard try decode(buffer).seq == Small.sample(index).seq else {
                    throw BenchError("codec: a message did not round-trip")
                }
            }
            let decoded = threadCPUNanos()
            guard run > 0 else { continue }  // warm-up
            encodeNanos.append(Double(encoded - start) / Double(count))
            decodeNanos.append(Double(decoded - encoded) / Double(count))
            pairs.append(Double(count) / (Double(decoded - start) / 1e9))
        }
        return (encodeNanos, decodeNanos, pairs)
    }
}
#endif
