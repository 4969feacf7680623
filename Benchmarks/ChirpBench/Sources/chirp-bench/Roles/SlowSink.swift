import Chirp
import Foundation
import NIOConcurrencyHelpers

#if os(Linux)
extension PeerRoles {
    /// What the slow sink has seen.
    private struct SlowSinkState {
        var received = 0
        var next = 0
        var outOfOrder = 0
    }

    /// A peer that consumes ``Small`` messages slowly (`rate` a second) for `slowSeconds`, then as fast as it can,
    /// with a `messages(of:)` consumer (`mode` "stream") or a synchronous `receive` handler that blocks its event
    /// loop (`mode` "blocked"). Every 100 ms it prints `stat RSS_KIB RECEIVED OUT_OF_ORDER`; messages must arrive with
    /// `seq` 0, 1, 2, ... (the flood figure of `make bench`, issue 16's bounded-memory goal).
    static func slowSink(service: String, port: Int, mode: String, rate: Int, slowSeconds: Double) throws {
        let configuration = try Configuration.bench(serviceType: service, name: "slow-sink")
        let transceiver = Transceiver(configuration: configuration)
        let state = NIOLockedValueBox(SlowSinkState())
        let fastAfter = nowNanos() + UInt64(slowSeconds * 1e9)
        let pause = UInt32(1_000_000 / max(rate, 1))
        @Sendable func consume(_ small: Small) {
            state.withLockedValue { state in
                if small.seq != state.next { state.outOfOrder += 1 }
                state.next = small.seq + 1
                state.received += 1
            }
            if nowNanos() < fastAfter { usleep(pause) }
        }
        var stream: MessageSequence<Small>?
        if mode == "blocked" {
            try transceiver.receive(Small.self) { small, _ in consume(small) }
        } else {
            stream = try transceiver.messages(of: Small.self)
        }
        try runBlocking {
            try await transceiver.start()
            try await transceiver.connect(host: "127.0.0.1", port: port)
        }
        if let stream {
            Thread.detachNewThread {
                try? runBlocking { for await message in stream { consume(message.payload) } }
            }
        }
        Thread.detachNewThread {
            while true {
                let (received, outOfOrder) = state.withLockedValue { ($0.received, $0.outOfOrder) }
                say("stat \(residentKiB()) \(received) \(outOfOrder)")
                usleep(100_000)
            }
        }
        say("connected")
        waitForStdinEOF()
        exit(0)
    }

    /// This process's resident memory (VmRSS), in KiB.
    static func residentKiB() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
        else { return 0 }
        return Int(line.split(whereSeparator: { $0 == " " || $0 == "\t" })[1]) ?? 0
    }
}
#endif
