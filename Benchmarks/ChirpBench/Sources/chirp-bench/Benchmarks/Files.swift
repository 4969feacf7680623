import Chirp
import ChirpFiles
import Foundation

#if os(Linux)
extension Harness {
    /// A file sent with `ChirpFiles` between two transceivers of this process on loopback (the receiver dialed by
    /// address, default ``FileTransferConfiguration``): from `send(file:to:)` to the sender's result, which includes
    /// the sender's SHA-256 pass before it offers, the chunks within the window of acknowledgements, the receiver's
    /// writes and its SHA-256, and the rename into place. The file is sparse (zeros, read from the page cache); the
    /// received copy is deleted after each run. Against `bulk.1MiB` of the same run when it ran (issue 34's goal:
    /// file throughput within 5% of it), else reported without a reference.
    func files() throws -> [Figure] {
        let mebibytes = options.quick ? 64 : 256
        let scratch = NSTemporaryDirectory() + "chirp-bench-files-" + UUID().uuidString.prefix(8)
        let inbox = scratch + "/inbox"
        try FileManager.default.createDirectory(atPath: inbox, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let source = scratch + "/source.bin"
        guard FileManager.default.createFile(atPath: source, contents: nil) else {
            throw BenchError("cannot create \(source)")
        }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: source))
        try handle.truncate(atOffset: UInt64(mebibytes) << 20)
        try handle.close()

        let serviceType = freshServiceType()
        var receiverConfiguration = try Configuration.bench(serviceType: serviceType, name: "files-receiver")
        receiverConfiguration.advertises = false  // dialed by address only
        var senderConfiguration = try Configuration.bench(serviceType: serviceType, name: "files-sender")
        senderConfiguration.advertises = false
        senderConfiguration.includesTools = true  // the receiver does not advertise itself
        let receiver = Transceiver(configuration: receiverConfiguration)
        let sender = Transceiver(configuration: senderConfiguration)
        let receiving = try FileTransfers(transceiver: receiver)
        let sending = try FileTransfers(transceiver: sender)
        defer {
            try? runBlocking {
                await sender.shutdown()
                await receiver.shutdown()
            }
        }
        let offers = try receiving.receive(into: inbox)
        let peer = try runBlocking {
            let port = try await receiver.startListening()
            try await sender.start()
            return try await sender.connect(host: "127.0.0.1", port: port)
        }
        // The receiver's side of each transfer; the sender's result says how it ended.
        let incoming = Task { for await offer in offers { _ = try? await offer.result() } }
        defer { incoming.cancel() }

        /// Seconds for one transfer of the file; the received copy is removed.
        func transfer(_ index: Int) throws -> Double {
            let name = "run-\(index).bin"
            return try runBlocking {
                let begin = nowNanos()
                let outgoing = try sending.send(file: source, named: name, to: peer)
                let saved = try await outgoing.result()
                let seconds = Double(nowNanos() - begin) / 1e9
                try FileManager.default.removeItem(atPath: inbox + "/" + saved)
                return seconds
            }
        }
        _ = try transfer(0)  // warm-up: the page cache, the code paths
        var rates: [Double] = []
        for index in 1...plan.runs {
            rates.append(Double(mebibytes << 20) / (try transfer(index)) / 1e9)
        }
        let reference = shared["bulk.1MiB"].map {
            Figure.Reference(name: "bulk.1MiB (same run)", value: $0, spread: nil)
        }
        return [
            Figure(
                name: "files.\(mebibytes)MiB",
                title: "a \(mebibytes) MiB file through ChirpFiles, SHA-256 on both sides, in one process on loopback",
                unit: "GB/s", samples: rates, reference: reference, goal: reference == nil ? nil : .ratioAtLeast(0.95),
                note: "\(mebibytes) MiB per run, sparse source; chunks of 128 KiB, a window of 8")
        ]
    }
}
#endif
