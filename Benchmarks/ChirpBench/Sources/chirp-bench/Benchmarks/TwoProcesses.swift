import Chirp
import Foundation
import NIOCore

#if os(Linux)
extension Harness {
    /// One-way throughput, round trip and bulk: this process and one sink process, over loopback, next to the same
    /// traffic over a plain TCP socket to a raw-sink process.
    func oneWayAndFriends() throws -> [Figure] {
        let session = try ChirpSession(executable: executable, sinks: 1)
        defer { session.close() }
        let raw = try RawSession(executable: executable)
        defer { raw.close() }
        var figures: [Figure] = []
        if options.wants("oneway") { figures += try oneWay(session, raw) }
        if options.wants("roundtrip") { figures += try roundTrip(session, raw) }
        if options.wants("bulk") { figures += try bulk(session, raw) }
        if options.wants("oneway") || options.wants("bulk") {
            // The same with a shared secret (TLS 1.2, pre-shared key): the cost of `Configuration.security`.
            let secure = try ChirpSession(executable: executable, sinks: 1, secure: true)
            defer { secure.close() }
            figures += try secretFigures(secure, plain: figures)
        }
        if options.wants("oneway") {
            // The same with a metrics backend that counts every update: what swift-metrics costs (Docs/Metrics.md).
            let backend = CountingMetrics()
            let measured = try ChirpSession(executable: executable, sinks: 1, metricsFactory: backend)
            defer { measured.close() }
            figures += try metricsFigures(measured, backend: backend, plain: figures)
        }
        return figures
    }

    /// A burst of `count` messages made by `make`, timed from the first send to the sink's ack.
    func burst<T: Encodable>(_ session: ChirpSession, count: Int, _ make: (Int) -> T) throws -> Burst {
        let peer = session.peers[0]
        session.resetAcks()
        try session.send(Start(count: count), to: peer)
        let cpu = processCPUNanos()
        let writes = processSyscalls().writes
        let start = nowNanos()
        for index in 0..<count { try session.send(make(index), to: peer) }
        let ack = try session.waitForAcks(1)[0]
        let seconds = Double(nowNanos() - start) / 1e9
        return Burst(
            seconds: seconds, senderCPU: Double(processCPUNanos() - cpu),
            senderWrites: Double(processSyscalls().writes - writes), ack: ack)
    }

    struct Burst {
        var seconds: Double
        /// Nanoseconds.
        var senderCPU: Double
        /// Write system calls of this process (writev, and eventfd writes that wake an event loop).
        var senderWrites: Double
        var ack: Ack
    }

    // MARK: - one-way

    private func oneWay(_ session: ChirpSession, _ raw: RawSession) throws -> [Figure] {
        let warm = try burst(session, count: options.quick ? 5000 : 20_000, Small.sample)
        let count = itemsPerRun(rate: 20_000 / warm.seconds, minimum: 5000, maximum: 400_000)
        var rates: [Double] = []
        var senderCPU: [Double] = []
        var receiverCPU: [Double] = []
        var writes: [Double] = []
        var reads: [Double] = []
        for _ in 0..<plan.runs {
            let run = try burst(session, count: count, Small.sample)
            rates.append(Double(count) / run.seconds)
            senderCPU.append(run.senderCPU / Double(count) / 1000)
            receiverCPU.append(Double(run.ack.cpuNanos) / Double(count) / 1000)
            writes.append(run.senderWrites / Double(count))
            reads.append(Double(run.ack.readSyscalls) / Double(count))
        }
        shared["oneway.senderCPUMicros"] = Spread(senderCPU).median

        let payload = try smallPayload()
        let rawWarm = try raw.frames(count: 200_000, payload: payload)
        let rawCount = itemsPerRun(rate: 200_000 / rawWarm, minimum: 100_000, maximum: 20_000_000)
        var rawRates: [Double] = []
        for _ in 0..<plan.runs {
            rawRates.append(Double(rawCount) / (try raw.frames(count: rawCount, payload: payload)))
        }
        let rawReference = Figure.Reference(
            name: "raw-tcp-frames", value: Spread(rawRates).median, spread: Spread(rawRates))

        // The same bytes as a `Data` payload: Chirp's path without the coder (the binary fast path), to tell the cost
        // of the transport from the cost of JSON.
        let bytes = Data(payload)
        let binaryWarm = try burst(session, count: options.quick ? 5000 : 20_000) { _ in bytes }
        let binaryCount = itemsPerRun(
            rate: Double(options.quick ? 5000 : 20_000) / binaryWarm.seconds, minimum: 5000, maximum: 2_000_000)
        var binaryRates: [Double] = []
        var binarySender: [Double] = []
        var binaryReceiver: [Double] = []
        for _ in 0..<plan.runs {
            let run = try burst(session, count: binaryCount) { _ in bytes }
            binaryRates.append(Double(binaryCount) / run.seconds)
            binarySender.append(run.senderCPU / Double(binaryCount) / 1000)
            binaryReceiver.append(Double(run.ack.cpuNanos) / Double(binaryCount) / 1000)
        }

        // pyzmq PUSH/PULL with json, the same messages (Benchmarks/pyzmq-anchor.py): the anchor and the goal's measure.
        let anchorCount = options.quick ? 20_000 : 100_000
        let anchor = PyZMQ.measure(.oneway, count: anchorCount, runs: plan.runs)
        let senderMicros = Spread(senderCPU).median
        return [
            Figure(
                name: "oneway.small",
                title: "one-way throughput, \(payload.count)-byte JSON Codable message, two processes",
                unit: "msg/s", samples: rates,
                reference: rawReference, anchor: try? anchor.get(),
                goal: .ratioAtLeast(2, of: "anchor"),
                note: ((try? anchor.get()).map { _ in "" } ?? "\(anchor.failureText); ")
                    + "sender CPU \(formatNumber(senderMicros)) µs/msg (goal <= 2: \(senderMicros <= 2 ? "MET" : "NOT MET")); "
                    + "\(count) msgs/run; per msg: CPU sender \(formatNumber(Spread(senderCPU).median)) µs, receiver \(formatNumber(Spread(receiverCPU).median)) µs; "
                    + "write syscalls \(formatNumber(Spread(writes).median)), read syscalls \(formatNumber(Spread(reads).median))",
                details: [
                    "messagesPerRun": Double(count), "senderCPUMicrosPerMessage": Spread(senderCPU).median,
                    "receiverCPUMicrosPerMessage": Spread(receiverCPU).median, "sendRetries": Double(session.retries),
                    "senderWriteSyscallsPerMessage": Spread(writes).median,
                    "receiverReadSyscallsPerMessage": Spread(reads).median
                ]),
            Figure(
                name: "oneway.small-binary",
                title:
                    "one-way throughput, the same \(payload.count) bytes as a Data payload (no coder), two processes",
                unit: "msg/s", samples: binaryRates, reference: rawReference,
                note:
                    "\(binaryCount) msgs/run; per msg: CPU sender \(formatNumber(Spread(binarySender).median)) µs, receiver \(formatNumber(Spread(binaryReceiver).median)) µs",
                details: [
                    "messagesPerRun": Double(binaryCount), "senderCPUMicrosPerMessage": Spread(binarySender).median,
                    "receiverCPUMicrosPerMessage": Spread(binaryReceiver).median
                ])
        ]
    }

    /// The JSON of the small message, as the raw reference sends it.
    private func smallPayload() throws -> [UInt8] {
        var buffer = ByteBufferAllocator().buffer(capacity: 128)
        try JSONMessageCoder().encode(Small.sample(0), into: &buffer)
        return buffer.readBytes(length: buffer.readableBytes) ?? []
    }

    // MARK: - round trip

    /// Request and ping round trips against the raw TCP echo, interleaved: each run measures Chirp's requests, its
    /// pings, the raw echo and a bare NIO ping-pong (``NIOSession``) one after the other, so that all see the machine
    /// in the same state. On this project's VMs the echo alone moves between 12 and 80 µs from one minute to the next
    /// (whether its two ends share a vCPU, and how deeply idle vCPUs sleep between the wake-ups a round trip needs),
    /// more than any change to Chirp moves its figures; a reference measured minutes apart from what it is compared
    /// with says more about the machine than about Chirp. The bare NIO ping-pong is the floor of any peer built on
    /// SwiftNIO: Chirp's pings are read against it too.
    ///
    /// Then the same again with the processes pinned, once on one CPU and once on two (``Placement``): Chirp and the
    /// echo each measured where the scheduler was told to put them, not where it happened to.
    private func roundTrip(_ session: ChirpSession, _ raw: RawSession) throws -> [Figure] {
        let count = plan.roundTrips
        let payload = try smallPayload()
        let nio = try NIOSession(executable: executable)
        defer { nio.close() }
        try runBlocking { [transceiver = session.transceiver, peer = session.peers[0]] in
            for seq in 0..<200 { try await Self.request(transceiver, peer, seq) }  // warm-up
        }
        _ = try raw.pingPong(count: 200, payload: payload)
        _ = try nio.onLoop(count: 200, frame: RawSession.frame(payload))
        let unpinned = try roundTripRuns(session, raw, nio, payload: payload)
        let anchor = PyZMQ.measure(.reqrep, count: count, runs: plan.runs)
        var figures = roundTripFigures(unpinned, anchor: anchor, placement: nil)

        let cpus = Affinity.current() ?? []
        let children = [raw.child.pid, nio.child.pid] + session.children.map(\.pid)
        if cpus.contains(0), cpus.contains(1) {
            defer {
                // Back to where everything was allowed to run, for the benchmarks that follow.
                for pid in [getpid()] + children { try? Affinity.pin(pid, to: cpus) }
            }
            for placement in Placement.allCases {
                try Affinity.pin(getpid(), to: [placement.cpus.requester])
                for pid in children { try Affinity.pin(pid, to: [placement.cpus.responder]) }
                _ = try raw.pingPong(count: 200, payload: payload)  // settle where they now are
                let runs = try roundTripRuns(session, raw, nio, payload: payload)
                figures += roundTripFigures(runs, anchor: nil, placement: placement)
            }
        } else {
            print("roundtrip: the pinned placements need CPUs 0 and 1 (this process may use \(cpus)); skipped")
        }
        return figures
    }

    private static func request(_ transceiver: Transceiver, _ peer: Peer, _ seq: Int) async throws {
        _ = try await transceiver.request(
            Query(seq: 100_000 + seq, from: "bench-main", text: "quick brown fox", urgent: false), to: peer,
            as: Answer.self)
    }

    /// Per run, the round-trip times (µs) of each path; the requester's write system calls and CPU time over the
    /// default path's requests.
    private struct RoundTripRuns {
        var requests: [[Double]] = []
        var pings: [[Double]] = []
        var onLoopRequests: [[Double]] = []
        var onLoopPings: [[Double]] = []
        var raw: [[Double]] = []
        /// The bare NIO ping-pong (``NIOSession``): from the handler, and from a task of the global executor.
        var nioOnLoop: [[Double]] = []
        var nioFromTask: [[Double]] = []
        var writes: UInt64 = 0
        var cpu: UInt64 = 0
    }

    private func roundTripRuns(_ session: ChirpSession, _ raw: RawSession, _ nio: NIOSession, payload: [UInt8]) throws
        -> RoundTripRuns
    {
        let transceiver = session.transceiver
        let peer = session.peers[0]
        let count = plan.roundTrips
        let executor = try transceiver.taskExecutor(for: peer)
        /// `count` requests, each timed; the requester's CPU time and write system calls over them.
        @Sendable func timedRequests() async throws -> (times: [Double], cpu: UInt64, writes: UInt64) {
            var times: [Double] = []
            times.reserveCapacity(count)
            let writesBefore = processSyscalls().writes
            let cpuBefore = processCPUNanos()
            for seq in 0..<count {
                let start = nowNanos()
                try await Self.request(transceiver, peer, seq)
                times.append(Double(nowNanos() - start) / 1000)
            }
            return (times, processCPUNanos() - cpuBefore, processSyscalls().writes - writesBefore)
        }
        /// `count / 2` pings, each timed.
        @Sendable func timedPings() async throws -> [Double] {
            var times: [Double] = []
            for _ in 0..<count / 2 {
                let start = nowNanos()
                _ = try await transceiver.ping(peer)
                times.append(Double(nowNanos() - start) / 1000)
            }
            return times
        }
        var runs = RoundTripRuns()
        for _ in 0..<plan.runs {
            let (requests, pings) = try runBlocking { (try await timedRequests(), try await timedPings()) }
            runs.cpu += requests.cpu
            runs.writes += requests.writes
            runs.requests.append(requests.times)
            runs.pings.append(pings)
            // The same from a task that prefers the connection's event loop (Transceiver.taskExecutor(for:)).
            let (loopRequests, loopPings) = try runBlocking {
                try await withTaskExecutorPreference(executor) { (try await timedRequests(), try await timedPings()) }
            }
            runs.onLoopRequests.append(loopRequests.times)
            runs.onLoopPings.append(loopPings)
            runs.raw.append(try raw.pingPong(count: count, payload: payload))
            let frame = RawSession.frame(payload)
            runs.nioOnLoop.append(try nio.onLoop(count: count / 2, frame: frame))
            runs.nioFromTask.append(
                try runBlocking { [driver = nio.driver] in try await driver.fromTask(count: count / 2, frame: frame) })
        }
        return runs
    }

    /// The four round-trip figures of `runs`; `placement` names pinned runs (`nil`: where the scheduler put them).
    private func roundTripFigures(
        _ runs: RoundTripRuns, anchor: Result<Figure.Reference, BenchError>?, placement: Placement?
    ) -> [Figure] {
        let count = plan.roundTrips
        let suffix = placement.map { ".\($0.rawValue)" } ?? ""
        let placed = placement.map { ", \($0.description)" } ?? ""
        let requests = Double(runs.requests.count * count)
        let writesPerRequest = Double(runs.writes) / requests
        let cpuPerRequest = Double(runs.cpu) / requests / 1000
        let rawMedians = runs.raw.map { Spread($0).median }
        let all = runs.requests.flatMap { $0 }
        let rawReference = Figure.Reference(
            name: "raw-tcp-echo\(suffix)", value: Spread(rawMedians).median, spread: Spread(rawMedians))
        let anchorFigure = anchor.flatMap { try? $0.get() }
        /// A bare NIO ping-pong of the same run, as a reference.
        func nioReference(_ samples: [[Double]], _ name: String) -> Figure.Reference {
            let medians = samples.map { Spread($0).median }
            return Figure.Reference(name: name + suffix, value: Spread(medians).median, spread: Spread(medians))
        }
        let nioFromTask = nioReference(runs.nioFromTask, "nio-pingpong")
        let nioOnLoop = nioReference(runs.nioOnLoop, "nio-pingpong-on-loop")
        let anchorNote = anchor.map { anchor in (try? anchor.get()).map { _ in "" } ?? "\(anchor.failureText); " } ?? ""
        return [
            Figure(
                name: "roundtrip.request\(suffix)",
                title: "request/response round trip, small Codable messages, two processes\(placed)",
                unit: "µs", samples: runs.requests.map { Spread($0).median }, reference: rawReference,
                anchor: anchorFigure, goal: .ratioAtMost(2),
                note: anchorNote
                    + "\(count) requests/run, median per run; p90 \(formatNumber(Spread.quantile(0.9, of: all))) µs, p99 \(formatNumber(Spread.quantile(0.99, of: all))) µs; "
                    + "requester per request: CPU \(formatNumber(cpuPerRequest)) µs, write syscalls \(formatNumber(writesPerRequest)); "
                    + "runs interleaved with the echo's",
                details: [
                    "requestsPerRun": Double(count), "p90": Spread.quantile(0.9, of: all),
                    "p99": Spread.quantile(0.99, of: all),
                    "requesterWriteSyscallsPerRequest": writesPerRequest, "requesterCPUMicrosPerRequest": cpuPerRequest
                ]),
            Figure(
                name: "roundtrip.ping\(suffix)",
                title: "Transceiver.ping round trip (protocol-level, no coder), two processes\(placed)",
                unit: "µs", samples: runs.pings.map { Spread($0).median }, reference: rawReference,
                anchor: nioFromTask, goal: .ratioAtMost(1.5),
                note: "\(count / 2) pings/run, median per run; vs: the bare NIO ping-pong awaited from a task"),
            Figure(
                name: "roundtrip.request-on-loop\(suffix)",
                title:
                    "request/response round trip from a task on the connection's event loop (taskExecutor(for:))\(placed)",
                unit: "µs", samples: runs.onLoopRequests.map { Spread($0).median }, reference: rawReference,
                goal: .ratioAtMost(2),
                note:
                    "\(count) requests/run, median per run; p90 \(formatNumber(Spread.quantile(0.9, of: runs.onLoopRequests.flatMap { $0 }))) µs"
            ),
            Figure(
                name: "roundtrip.ping-on-loop\(suffix)",
                title:
                    "Transceiver.ping round trip from a task on the connection's event loop (taskExecutor(for:))\(placed)",
                unit: "µs", samples: runs.onLoopPings.map { Spread($0).median }, reference: rawReference,
                anchor: nioOnLoop, goal: .ratioAtMost(1.5),
                note: "\(count / 2) pings/run, median per run; vs: the bare NIO ping-pong on its loop"),
            Figure(
                name: "roundtrip.nio-pingpong\(suffix)",
                title:
                    "bare SwiftNIO ping-pong, no Chirp: one handler each side, each echo awaited by a task of the global executor\(placed)",
                unit: "µs", samples: runs.nioFromTask.map { Spread($0).median }, reference: rawReference,
                note:
                    "\(count / 2) round trips/run, median per run; the floor of Chirp's default path (a reference, no goal)"
            ),
            Figure(
                name: "roundtrip.nio-pingpong-on-loop\(suffix)",
                title:
                    "bare SwiftNIO ping-pong, no Chirp: one handler each side, the next frame written from the handler\(placed)",
                unit: "µs", samples: runs.nioOnLoop.map { Spread($0).median }, reference: rawReference,
                note:
                    "\(count / 2) round trips/run, median per run; the floor of a round trip from the loop (a reference, no goal)"
            )
        ]
    }

    // MARK: - bulk

    private func bulk(_ session: ChirpSession, _ raw: RawSession) throws -> [Figure] {
        let mebibyte = 1 << 20
        let payload = Data(repeating: 0xAB, count: mebibyte)
        let warm = try burst(session, count: 64) { _ in payload }
        let count = itemsPerRun(rate: 64 / warm.seconds, minimum: 32, maximum: 8192)
        var rates: [Double] = []
        var senderCPU: [Double] = []
        var receiverCPU: [Double] = []
        for _ in 0..<plan.runs {
            let run = try burst(session, count: count) { _ in payload }
            guard run.ack.bytes == count * mebibyte else {
                throw BenchError("the sink received \(run.ack.bytes) bytes, not \(count * mebibyte)")
            }
            rates.append(Double(count * mebibyte) / run.seconds / 1e9)
            senderCPU.append(run.senderCPU / Double(count) / 1e6)
            receiverCPU.append(Double(run.ack.cpuNanos) / Double(count) / 1e6)
        }
        _ = try raw.bulk(total: 64 * mebibyte)
        var rawRates: [Double] = []
        for _ in 0..<plan.runs {
            rawRates.append(Double(count * mebibyte) / (try raw.bulk(total: count * mebibyte)) / 1e9)
        }
        shared["bulk.1MiB"] = Spread(rates).median  // the reference of `files`
        return [
            Figure(
                name: "bulk.1MiB", title: "bulk: 1 MiB Data payloads between two processes", unit: "GB/s",
                samples: rates,
                reference: .init(name: "raw-tcp-1MiB-writes", value: Spread(rawRates).median, spread: Spread(rawRates)),
                goal: .ratioAtLeast(0.9),
                note:
                    "\(count) MiB/run; CPU per MiB: sender \(formatNumber(Spread(senderCPU).median)) ms, receiver \(formatNumber(Spread(receiverCPU).median)) ms",
                details: [
                    "mebibytesPerRun": Double(count), "senderCPUMillisPerMiB": Spread(senderCPU).median,
                    "receiverCPUMillisPerMiB": Spread(receiverCPU).median
                ])
        ]
    }
}
#endif
