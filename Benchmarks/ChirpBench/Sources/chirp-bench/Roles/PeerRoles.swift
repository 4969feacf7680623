import Chirp
import Foundation
import Logging
import NIOConcurrencyHelpers

#if os(Linux)
/// The roles the harness spawns this executable in. Each reports on standard output, one line at a time, and
/// (except `join`, `noop` and `log-ref`, which exit by themselves) runs until its standard input closes.
enum PeerRoles {
    static func run(role: String, arguments: [String]) throws {
        _ = started
        func option(_ name: String) throws -> String {
            guard let value = Options.value(of: name, in: arguments) else {
                throw BenchError("--role \(role) needs \(name)")
            }
            return value
        }
        switch role {
        case "sink":
            try sink(
                service: try option("--service"), port: Int(try option("--port")) ?? 0, name: try option("--name"),
                secure: arguments.contains("--secure"))
        case "raw-sink": try rawSink()
        case "nio-echo": try nioEcho()
        case "slow-sink":
            try slowSink(
                service: try option("--service"), port: Int(try option("--port")) ?? 0, mode: try option("--mode"),
                rate: Int(try option("--rate")) ?? 1000, slowSeconds: Double(try option("--slow-seconds")) ?? 10)
        case "join": try join(service: try option("--service"), advertises: true)
        case "join-cli": try join(service: try option("--service"), advertises: false)
        case "noop": say("connected 0")
        case "log-ref":
            logReference(count: Int(try option("--count")) ?? 10_000, batches: Int(try option("--batches")) ?? 5)
        default: throw BenchError("unknown role \(role)")
        }
    }

    /// A line on standard output, flushed at once (the harness waits for it).
    static func say(_ line: String) {
        print(line)
        fflush(nil)
    }

    /// Logging off: the figures are about messages, not about the logs Chirp writes while connecting.
    /// `CHIRP_BENCH_LOG=1` shows them on standard error, each with the milliseconds since the role started (where a
    /// start-up's time goes: `chirp-bench --role join-cli --service TYPE` against a running peer).
    static let quietLogger: Logger = {
        guard ProcessInfo.processInfo.environment["CHIRP_BENCH_LOG"] != nil else {
            return Logger(label: "chirp-bench") { _ in SwiftLogNoOpLogHandler() }
        }
        var logger = Logger(label: "chirp-bench") { _ in ElapsedLogHandler() }
        logger.logLevel = .trace
        return logger
    }()

    /// When the role started (first read at the start of ``run(role:arguments:)``), for ``ElapsedLogHandler``.
    static let started = nowNanos()

    /// Writes `+12.345 ms level message metadata` lines to standard error.
    struct ElapsedLogHandler: LogHandler {
        var logLevel: Logger.Level = .trace
        var metadata: Logger.Metadata = [:]
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            let all = metadata.merging(event.metadata ?? [:]) { $1 }
            let pairs = all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            let millis = Double(nowNanos() &- PeerRoles.started) / 1e6
            FileHandle.standardError.write(
                Data("+\(String(format: "%.3f", millis)) ms \(event.level) \(event.message) \(pairs)\n".utf8))
        }
    }

    /// Blocks until standard input closes (the harness is done with us, or died).
    static func waitForStdinEOF() {
        var byte: UInt8 = 0
        while true {
            let count = read(0, &byte, 1)
            if count == 0 || (count < 0 && errno != EINTR) { return }
        }
    }

    // MARK: - sink

    private struct SinkState {
        var expected = 0
        var count = 0
        var bytes = 0
        var cpuAtStart: UInt64 = 0
        var readsAtStart: UInt64 = 0
    }

    /// A Chirp peer that connects to the harness at `port`, counts bursts of messages and acknowledges each burst,
    /// and answers ``Query`` requests.
    static func sink(service: String, port: Int, name: String, secure: Bool) throws {
        let configuration = try Configuration.bench(serviceType: service, name: name, secure: secure)
        let transceiver = Transceiver(configuration: configuration)
        let state = NIOLockedValueBox(SinkState())

        @Sendable func counted(bytes: Int, sender: Peer) {
            let done: Ack? = state.withLockedValue { state in
                state.count += 1
                state.bytes += bytes
                guard state.count == state.expected else { return nil }
                return Ack(
                    count: state.count, bytes: state.bytes, cpuNanos: processCPUNanos() - state.cpuAtStart,
                    readSyscalls: processSyscalls().reads - state.readsAtStart)
            }
            if let done { try? transceiver.send(done, to: sender) }
        }
        try transceiver.receive(Start.self) { start, _ in
            state.withLockedValue {
                $0 = SinkState(
                    expected: start.count, cpuAtStart: processCPUNanos(), readsAtStart: processSyscalls().reads)
            }
        }
        try transceiver.receive(Small.self) { _, sender in counted(bytes: 0, sender: sender) }
        try transceiver.receive(Data.self) { data, sender in counted(bytes: data.count, sender: sender) }
        try transceiver.respond(to: Query.self) { query, _ in
            Answer(seq: query.seq, from: "bench-sink", text: "quick brown fox", done: true)
        }

        try runBlocking {
            try await transceiver.start()
            try await transceiver.connect(host: "127.0.0.1", port: port)
        }
        say("connected")
        waitForStdinEOF()
        try? runBlocking { await transceiver.shutdown() }
    }

    // MARK: - join

    /// Joins `service` as a fresh process, reports how long it took once connected to a peer, and exits. With
    /// `advertises` false it only browses and dials, as the command-line tools do (`Configuration.advertises`).
    static func join(service: String, advertises: Bool) throws {
        let start = nowNanos()
        var configuration = try Configuration.bench(serviceType: service, name: advertises ? "bench-join" : "bench-cli")
        configuration.advertises = advertises
        let transceiver = Transceiver(configuration: configuration)
        let connected = Watched(false)
        transceiver.availablePeersDidChange = { peers in
            if peers.contains(where: \.isConnected) { connected.update { $0 = true } }
        }
        try transceiver.resume()
        guard connected.wait(timeout: 20, until: { $0 }) != nil else {
            throw BenchError("join: no peer connected within 20 s")
        }
        say("connected \(nowNanos() - start)")
        exit(0)
    }

    // MARK: - log-ref

    /// Times `logger.info` with swift-log's `StreamLogHandler` on standard error (the harness points it at /dev/null):
    /// `batches` lines of the mean nanoseconds per call over `count` calls.
    static func logReference(count: Int, batches: Int) {
        let logger = Logger(label: "bench") { StreamLogHandler.standardError(label: $0) }
        for _ in 0..<min(count, 2000) { logger.info("request handled", metadata: ["peer": "alice"]) }
        for _ in 0..<batches {
            let start = nowNanos()
            for _ in 0..<count { logger.info("request handled", metadata: ["peer": "alice"]) }
            say("batch \(Double(nowNanos() - start) / Double(count))")
        }
    }

    // MARK: - raw-sink

    /// The raw TCP peer: accepts one connection, then serves ``RawMode`` requests until EOF.
    static func rawSink() throws {
        let (listener, port) = try RawSocket.listen()
        say("port \(port)")
        let fd = try RawSocket.accept(listener)
        let capacity = 1 << 20
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 16)
        defer { buffer.deallocate() }
        var ack: UInt8 = 1
        while true {
            let header = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<RawMode.headerSize])
            guard try RawSocket.readExactly(fd, header) else { return }
            guard let mode = RawMode(rawValue: header[0]) else {
                throw BenchError("raw-sink: unknown mode \(header[0])")
            }
            let count = Int(UInt64(littleEndian: header.loadUnaligned(fromByteOffset: 1, as: UInt64.self)))
            switch mode {
            case .bulk:
                var remaining = count
                while remaining > 0 {
                    let got = read(fd, buffer.baseAddress!, min(capacity, remaining))
                    if got <= 0 {
                        if got < 0 && errno == EINTR { continue }
                        return
                    }
                    remaining -= got
                }
                try withUnsafeBytes(of: &ack) { try RawSocket.writeAll(fd, $0) }
            case .frames:
                // Walk the length prefixes, as a frame decoder would.
                var frames = 0
                var prefix: UInt32 = 0
                var prefixBytes = 0
                var skip = 0
                while frames < count {
                    let got = read(fd, buffer.baseAddress!, capacity)
                    if got <= 0 {
                        if got < 0 && errno == EINTR { continue }
                        return
                    }
                    var position = 0
                    while position < got {
                        if skip > 0 {
                            let step = min(skip, got - position)
                            skip -= step
                            position += step
                            if skip == 0 { frames += 1 }
                        } else {
                            prefix = prefix << 8 | UInt32(buffer[position])
                            prefixBytes += 1
                            position += 1
                            if prefixBytes == 4 {
                                skip = Int(prefix)
                                prefix = 0
                                prefixBytes = 0
                                if skip == 0 { frames += 1 }
                            }
                        }
                    }
                }
                try withUnsafeBytes(of: &ack) { try RawSocket.writeAll(fd, $0) }
            case .pingPong:
                for _ in 0..<count {
                    let prefix = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<4])
                    guard try RawSocket.readExactly(fd, prefix) else { return }
                    let length = Int(UInt32(bigEndian: prefix.loadUnaligned(as: UInt32.self)))
                    let body = UnsafeMutableRawBufferPointer(rebasing: buffer[4..<(4 + length)])
                    guard try RawSocket.readExactly(fd, body) else { return }
                    try RawSocket.writeAll(fd, UnsafeRawBufferPointer(rebasing: buffer[0..<(4 + length)]))
                }
            }
        }
    }
}
#endif
