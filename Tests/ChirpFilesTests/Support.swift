import Chirp
import ChirpTestSupport
import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import ChirpFiles

/// A transceiver of `type` on loopback.
func makeTransceiver(_ name: String, type: String, id: String = UUID().uuidString) -> Transceiver {
    var configuration = Configuration(serviceType: type)
    configuration.peerName = name
    configuration.peerID = id
    configuration.interface = .loopback
    return Transceiver(configuration: configuration)
}

/// Waits for `transceiver` to be connected to the peer `id` (any peer when `nil`), on its events.
func connectedPeer(_ transceiver: Transceiver, id: String? = nil, timeout: Duration = .seconds(30)) async throws -> Peer
{
    let events = transceiver.makeEvents()
    if let peer = transceiver.connectedPeers.first(where: { id == nil || $0.id == id }) { return peer }
    return try await withTimeout(timeout, "a connected peer") {
        for await event in events {
            if case .peerConnected(let peer) = event, id == nil || peer.id == id { return peer }
        }
        throw CancellationError()
    }
}

/// Alice sends, bob receives into `directory`.
struct FilePair {
    let alice: Transceiver
    let bob: Transceiver
    let aliceFiles: FileTransfers
    let bobFiles: FileTransfers
    let incoming: AsyncStream<IncomingFileTransfer>
    let bobPeer: Peer
    let directory: String

    static func start(
        configuration: FileTransferConfiguration = FileTransferConfiguration(), holdAcksAfter: Int64? = nil,
        accepting decide: @escaping @Sendable (IncomingFileOffer) async -> Bool = { _ in true }
    ) async throws -> FilePair {
        let type = uniqueServiceType()
        let alice = makeTransceiver("alice", type: type)
        let bob = makeTransceiver("bob", type: type)
        let aliceFiles = try FileTransfers(transceiver: alice, configuration: configuration)
        let bobFiles = try FileTransfers(transceiver: bob, configuration: configuration)
        bobFiles.state.withLockedValue { $0.holdAcksAfter = holdAcksAfter }
        let directory = TestSupport.temporaryDirectory()
        let incoming = try bobFiles.receive(into: directory, accepting: decide)
        try await alice.start()
        try await bob.start()
        let bobPeer = try await connectedPeer(alice, id: bob.localPeer.id)
        return FilePair(
            alice: alice, bob: bob, aliceFiles: aliceFiles, bobFiles: bobFiles, incoming: incoming, bobPeer: bobPeer,
            directory: directory)
    }

    func nextIncoming() async throws -> IncomingFileTransfer {
        let incoming = self.incoming
        return try await withTimeout(.seconds(30), "an incoming transfer") {
            for await transfer in incoming { return transfer }
            throw CancellationError()
        }
    }

    func stop() async {
        await alice.shutdown()
        await bob.shutdown()
        try? FileManager.default.removeItem(atPath: directory)
    }

    var partials: [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: directory + "/.chirp-partial")) ?? []
    }
}

/// A file of `size` pseudo-random bytes (seeded), written a MiB at a time.
func makeFile(size: Int, seed: UInt64 = 1) throws -> String {
    let path = TestSupport.temporaryDirectory() + "/data.bin"
    _ = FileManager.default.createFile(atPath: path, contents: nil)
    let handle = try #require(FileHandle(forWritingAtPath: path))
    defer { try? handle.close() }
    var random = SeededRandomNumberGenerator(seed: seed)
    var left = size
    while left > 0 {
        let count = min(left, 1 << 20)
        var piece = [UInt8](repeating: 0, count: count)
        for index in stride(from: 0, to: count, by: 8) {
            var value = random.next()
            for byte in index..<min(index + 8, count) {
                piece[byte] = UInt8(truncatingIfNeeded: value)
                value >>= 8
            }
        }
        try handle.write(contentsOf: Data(piece))
        left -= count
    }
    return path
}

func sha256(_ path: String) throws -> String { try FileDigest.sha256(ofFileAt: path) }

/// The last value of a progress sequence (it finishes when the transfer ends).
func lastProgress(_ progress: AsyncStream<FileTransferProgress>) -> Task<FileTransferProgress?, Never> {
    Task {
        var last: FileTransferProgress?
        for await value in progress { last = value }
        return last
    }
}

/// Waits until `transfer` has written at least `bytes`, on its progress.
func written(_ bytes: Int64, by transfer: IncomingFileTransfer) async throws {
    let progress = transfer.progress
    try await withTimeout(.seconds(30), "\(bytes) bytes written") {
        if transfer.currentProgress.completedBytes >= bytes { return }
        for await value in progress where value.completedBytes >= bytes { return }
        throw CancellationError()
    }
}

/// The error `body` throws as a FileTransferError (`nil` when it returns, or does not end within a minute).
func transferError<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async -> FileTransferError? {
    do {
        _ = try await finished(body)
        return nil
    } catch {
        return error as? FileTransferError
    }
}

/// `body`'s value (a transfer's result), failing after a minute instead of hanging the suite.
func finished<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withTimeout(.seconds(60), "the end of the transfer", body)
}

/// This process's resident memory, from /proc (Linux), in bytes.
func residentBytes() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        let digits = line.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        return digits * 1024
    }
    return 0
}
