import Chirp
import Foundation

#if os(Linux)
extension Harness {
    /// A peer flooding small messages at an app that consumes 1,000 a second: with a `messages(of:)` consumer, and
    /// with a synchronous `receive` handler that blocks its event loop for a millisecond a message. The app's resident
    /// memory must stay under 64 MiB above its start (goal of issue 16); the flood's `send` throws
    /// `outboundLimitExceeded` once its queue (1 MiB here) is full, and the same message is offered again a
    /// millisecond later; once the app speeds up, every accepted message must arrive, in order.
    func flood() throws -> [Figure] {
        var figures: [Figure] = []
        let modes =
            ProcessInfo.processInfo.environment["CHIRP_BENCH_FLOOD_MODES"].map {
                $0.split(separator: ",").map(String.init)
            }
            ?? ["stream", "blocked"]
        for mode in modes {
            figures.append(try flood(mode: mode))
        }
        return figures
    }

    private func flood(mode: String) throws -> Figure {
        let slowSeconds = options.quick ? 3.0 : 10.0
        let offered = 1_000_000
        let serviceType = freshServiceType()
        var configuration = try Configuration.bench(serviceType: serviceType, name: "bench-flood")
        configuration.outboundLimit = 1 << 20  // so that the flood meets a full queue within the run
        let transceiver = Transceiver(configuration: configuration)
        let port = try runBlocking { try await transceiver.startListening() }
        defer { transceiver.stop() }
        let child = try Child(
            executable,
            [
                "--role", "slow-sink", "--service", serviceType, "--port", "\(port)", "--mode", mode, "--rate", "1000",
                "--slow-seconds", "\(slowSeconds)"
            ])
        defer { child.stop() }
        guard child.stdout?.next(timeout: 60, where: { $0 == "connected" }) != nil else {
            throw BenchError("the slow sink did not connect: \(child.stdout?.text ?? "")")
        }
        let deadline = nowNanos() + 30_000_000_000
        while transceiver.connectedPeers.isEmpty {
            guard nowNanos() < deadline else { throw BenchError("the slow sink is not connected") }
            usleep(10_000)
        }
        let peer = transceiver.connectedPeers[0]
        guard let first = child.stdout?.next(timeout: 10, where: { $0.hasPrefix("stat ") }) else {
            throw BenchError("no stat line")
        }
        let startKiB = Self.stat(first.text).kib

        // Offer up to 1,000,000 messages while the sink is slow; a full queue throws, and the same message is offered
        // again after a millisecond.
        var accepted = 0
        var throwsFull = 0
        let stopOffering = nowNanos() + UInt64(slowSeconds * 1e9)
        while accepted < offered && nowNanos() < stopOffering {
            do {
                try transceiver.send(
                    Small(seq: accepted, from: "bench-flood", text: "quick brown fox", urgent: false), to: peer)
                accepted += 1
            } catch let error as ChirpError where error.code == .outboundLimitExceeded {
                throwsFull += 1
                usleep(1000)
            }
        }
        // The sink speeds up: wait until it has every accepted message.
        var peakKiB = startKiB
        var last = (kib: startKiB, received: 0, outOfOrder: 0)
        let drainDeadline = nowNanos() + 120_000_000_000
        while last.received < accepted && nowNanos() < drainDeadline {
            guard let line = child.stdout?.next(timeout: 10, where: { $0.hasPrefix("stat ") }) else { break }
            last = Self.stat(line.text)
            peakKiB = max(peakKiB, last.kib)
        }
        // The peak over the whole run, slow phase included (lines read now were written then).
        let growthMiB = Double(peakKiB - startKiB) / 1024
        let lost = accepted - last.received
        return Figure(
            name: "flood.\(mode)",
            title:
                "resident memory of an app consuming 1,000 msg/s (\(mode == "stream" ? "messages(of:)" : "blocking receive handler")) under a flood",
            unit: "MiB", samples: [growthMiB], goal: .atMost(64),
            note:
                "offered for \(Int(slowSeconds)) s: \(accepted) accepted, send threw outboundLimitExceeded \(throwsFull) times; "
                + "\(last.received) received, \(lost) lost, \(last.outOfOrder) out of order",
            details: [
                "accepted": Double(accepted), "throwsFull": Double(throwsFull), "received": Double(last.received),
                "lost": Double(lost), "outOfOrder": Double(last.outOfOrder), "startMiB": Double(startKiB) / 1024
            ])
    }

    private static func stat(_ line: String) -> (kib: Int, received: Int, outOfOrder: Int) {
        let parts = line.split(separator: " ").dropFirst().compactMap { Int($0) }
        guard parts.count == 3 else { return (0, 0, 0) }
        return (parts[0], parts[1], parts[2])
    }
}
#endif
