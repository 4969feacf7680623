import Chirp
import Foundation
import NIOConcurrencyHelpers
import Testing

/// `chirp listen` with its output going to a pipe nobody reads, while a peer sends as fast as it can: before
/// backpressure its memory grew by hundreds of megabytes in seconds. Now it stops reading the sender, whose
/// the waiting `send` waits: chirp's memory stays bounded and nothing is lost.
extension ChirpCLITests {
    @Suite struct Flood {
        @Test func listenIntoAStalledPipeHoldsTheSenderBackInBoundedMemory() async throws {
            let type = uniqueServiceType()
            let listen = Process()
            listen.executableURL = try requireBinary("chirp")
            listen.arguments = ["listen", type, "--interface", "lo", "--name", "listener"]
            let stalled = Pipe()  // never read: chirp's writes block once its 64 KiB are full
            listen.standardOutput = stalled
            listen.standardError = FileHandle.nullDevice
            try listen.run()
            defer { if listen.isRunning { kill(listen.processIdentifier, SIGKILL) } }

            // The sender only dials (it does not advertise): one connection, no tie-break, whose retired connection
            // would be read to its end whatever chirp's consumer says.
            var configuration = Configuration(serviceType: type)
            configuration.peerName = "flooder"
            configuration.interface = .loopback
            configuration.advertises = false
            let sender = Transceiver(configuration: configuration)
            try await sender.start()
            try await withTeardown {
                let listener = try #require(
                    await waitForPeer(named: "listener", on: sender), "chirp listen never connected")
                let baseline = try #require(residentBytes(of: listen.processIdentifier))

                // 1 KiB messages, up to 512 MiB worth: far more than chirp could buffer unnoticed.
                let total = 512 * 1024
                let filler = String(repeating: "x", count: 1000)
                let sent = NIOLockedValueBox(0)
                let sending = Task {
                    for seq in 0..<total {
                        try await sender.send(ChatText(text: "\(seq) \(filler)"), to: listener)
                        sent.withLockedValue { $0 = seq + 1 }
                    }
                }
                defer { sending.cancel() }

                // Until the sender has made no progress for 3 s (held back), watching chirp's memory all along.
                var peak = baseline
                var last = -1
                var since = ContinuousClock.now
                let deadline = ContinuousClock.now + .seconds(120)
                while ContinuousClock.now - since < .seconds(3), ContinuousClock.now < deadline {
                    if let rss = residentBytes(of: listen.processIdentifier) { peak = max(peak, rss) }
                    let now = sent.withLockedValue { $0 }
                    if now != last { (last, since) = (now, .now) }
                    if now == total { break }
                    try await Task.sleep(for: .milliseconds(50))
                }
                let grew = peak - baseline
                #expect(last < total, "the sender was never held back: chirp took all \(total) messages")
                #expect(grew < 64 << 20, "chirp listen grew by \(grew >> 20) MiB (from \(baseline >> 20) MiB)")
                #expect(listen.isRunning)
            } teardown: {
                await sender.shutdown()
            }
        }
    }
}

/// The resident memory of process `pid`, from /proc (Linux); `nil` elsewhere or when it is gone.
func residentBytes(of pid: Int32) -> Int? {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
        let kib = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
    else { return nil }
    return kib * 1024
}
