import Chirp
import Foundation
import Metrics

#if os(Linux)
/// The harness's transceiver and `sinks` peer processes connected to it, on a fresh service type over loopback.
///
/// The sinks connect with `connect(host:port:)`, so no figure waits on discovery; they still advertise and browse,
/// as every Chirp peer does.
final class ChirpSession {
    let transceiver: Transceiver
    let children: [Child]
    let peers: [Peer]
    let serviceType: String
    private let acks = Watched<[Ack]>([])
    /// Times a send found the peer's outbound queue full and was retried.
    private(set) var retries = 0

    /// Starts `sinks` sink processes; with `secure`, every peer holds the same shared secret. `metricsFactory` is
    /// this process's metrics backend (none by default, as in an app that bootstraps none).
    init(executable: String, sinks: Int, secure: Bool = false, metricsFactory: (any MetricsFactory)? = nil) throws {
        serviceType = freshServiceType()
        var configuration = try Configuration.bench(serviceType: serviceType, name: "bench-main", secure: secure)
        configuration.metricsFactory = metricsFactory
        let transceiver = Transceiver(configuration: configuration)
        self.transceiver = transceiver
        try transceiver.receive(Ack.self) { [acks] ack, _ in acks.update { $0.append(ack) } }
        let port = try runBlocking { try await transceiver.startListening() }
        var children: [Child] = []
        do {
            for index in 0..<sinks {
                children.append(
                    try Child(
                        executable,
                        [
                            "--role", "sink", "--service", serviceType, "--port", "\(port)", "--name", "sink-\(index)"
                        ]
                            + (secure ? ["--secure"] : []),
                        prefix: Self.peerWrapper))
            }
            for child in children where child.stdout?.next(timeout: 60, where: { $0 == "connected" }) == nil {
                throw BenchError("a sink did not connect: \(child.stdout?.text ?? "")")
            }
            let deadline = nowNanos() + 30_000_000_000
            while transceiver.connectedPeers.count < sinks {
                guard nowNanos() < deadline else {
                    throw BenchError("only \(transceiver.connectedPeers.count) of \(sinks) sinks connected")
                }
                usleep(10_000)
            }
        } catch {
            children.forEach { $0.stop() }
            transceiver.stop()
            throw error
        }
        self.children = children
        peers = transceiver.connectedPeers
    }

    /// A command the sinks are started under, from `CHIRP_BENCH_PEER_WRAPPER` (e.g. `valgrind --tool=callgrind`):
    /// how the receiving side is profiled.
    static var peerWrapper: [String] {
        (ProcessInfo.processInfo.environment["CHIRP_BENCH_PEER_WRAPPER"] ?? "").split(separator: " ").map(String.init)
    }

    /// Forgets the acks received so far.
    func resetAcks() { acks.update { $0 = [] } }

    /// Waits until `count` acks arrived since the last ``resetAcks()``.
    func waitForAcks(_ count: Int, timeout: Double = 120) throws -> [Ack] {
        guard let received = acks.wait(timeout: timeout, until: { $0.count >= count }) else {
            throw BenchError("only \(acks.current.count) of \(count) sinks acknowledged within \(Int(timeout)) s")
        }
        return received
    }

    /// Sends `value`, waiting while the peer's outbound queue is full.
    func send<T: Encodable>(_ value: T, to peer: Peer) throws {
        while true {
            do {
                try transceiver.send(value, to: peer)
                return
            } catch let error as ChirpError where error.code == .outboundLimitExceeded {
                retries += 1
                usleep(50)
            }
        }
    }

    func close() {
        children.forEach { $0.closeStdin() }
        children.forEach { $0.stop() }
        try? runBlocking { [transceiver] in await transceiver.shutdown() }
    }
}

/// A connection to a raw-sink process: plain TCP, no Chirp.
final class RawSession {
    let child: Child
    let fd: Int32

    init(executable: String) throws {
        let (child, port) = try Child.listeningPeer(executable, role: "raw-sink", what: "the raw sink")
        self.child = child
        fd = try RawSocket.connect(port: port)
    }

    private func header(_ mode: RawMode, count: Int) throws {
        var bytes = [UInt8](repeating: 0, count: RawMode.headerSize)
        bytes[0] = mode.rawValue
        withUnsafeBytes(of: UInt64(count).littleEndian) { for i in 0..<8 { bytes[1 + i] = $0[i] } }
        try bytes.withUnsafeBytes { try RawSocket.writeAll(fd, $0) }
    }

    private func waitForAck() throws {
        var byte: UInt8 = 0
        guard try withUnsafeMutableBytes(of: &byte, { try RawSocket.readExactly(fd, $0) }) else {
            throw BenchError("the raw sink closed the connection")
        }
    }

    /// Seconds to write `total` bytes in writes of `chunk` bytes, until the sink acknowledged them.
    func bulk(total: Int, chunk: Int = 1 << 20) throws -> Double {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk, alignment: 16)
        defer { buffer.deallocate() }
        buffer.initializeMemory(as: UInt8.self, repeating: 0xAB)
        try header(.bulk, count: total)
        let start = nowNanos()
        var remaining = total
        while remaining > 0 {
            let size = min(chunk, remaining)
            try RawSocket.writeAll(fd, UnsafeRawBufferPointer(rebasing: buffer[0..<size]))
            remaining -= size
        }
        try waitForAck()
        return Double(nowNanos() - start) / 1e9
    }

    /// Seconds to send `count` frames of `payload` (each with a 4-byte length prefix), batched into 64 KiB writes.
    func frames(count: Int, payload: [UInt8]) throws -> Double {
        var frame = withUnsafeBytes(of: UInt32(payload.count).bigEndian) { Array($0) }
        frame += payload
        let perChunk = max(1, 65536 / frame.count)
        let chunk = Array((0..<perChunk).map { _ in frame }.joined())
        try header(.frames, count: count)
        let start = nowNanos()
        var remaining = count
        try chunk.withUnsafeBytes { bytes in
            while remaining > 0 {
                let frames = min(perChunk, remaining)
                try RawSocket.writeAll(fd, UnsafeRawBufferPointer(rebasing: bytes[0..<(frames * frame.count)]))
                remaining -= frames
            }
        }
        try waitForAck()
        return Double(nowNanos() - start) / 1e9
    }

    /// `payload` behind its 4-byte big-endian length: what ``pingPong(count:payload:)`` echoes.
    static func frame(_ payload: [UInt8]) -> [UInt8] {
        withUnsafeBytes(of: UInt32(payload.count).bigEndian) { Array($0) } + payload
    }

    /// Round-trip times, in microseconds, of `count` frames of `payload` echoed one at a time.
    func pingPong(count: Int, payload: [UInt8]) throws -> [Double] {
        let frame = Self.frame(payload)
        var echo = [UInt8](repeating: 0, count: frame.count)
        var times: [Double] = []
        times.reserveCapacity(count)
        try header(.pingPong, count: count)
        try frame.withUnsafeBytes { out in
            try echo.withUnsafeMutableBytes { back in
                for _ in 0..<count {
                    let start = nowNanos()
                    try RawSocket.writeAll(fd, out)
                    guard try RawSocket.readExactly(fd, back) else {
                        throw BenchError("the raw sink closed the connection")
                    }
                    times.append(Double(nowNanos() - start) / 1000)
                }
            }
        }
        return times
    }

    func close() {
        Glibc.close(fd)
        child.stop()
    }
}
#endif

extension Transceiver {
    /// Starts the transceiver and returns the TCP port it listens on, as an app learns it: from the `started` event.
    func startListening() async throws -> Int {
        let events = makeEvents()
        try await start()
        for await event in events {
            if case .started(let port) = event { return port }
        }
        throw BenchError("no listening port")
    }
}
