import ArgumentParser
import Chirp
import ChirpFiles
import Foundation
import Logging

/// `chirp send-file PATH --to PEER`: sends a file to a `chirp receive-files` (or any app receiving files).
struct SendFileCommand: AsyncParsableCommand, Sendable {
    static let configuration = CommandConfiguration(
        commandName: "send-file",
        abstract: "Send a file to a peer that receives files (chirp receive-files).",
        discussion: """
            chirp joins TYPE (chirp-files by default) as a peer, waits (up to
            --timeout, 10 s by default) for the peer named by --to, and sends the
            file in chunks, with its SHA-256: the receiver keeps it only when every
            byte arrived and the checksum matches, under a free name (never
            replacing a file). When the connection drops, chirp waits up to a
            minute for the peer and resumes where the receiver is. Ctrl-C cancels
            the transfer on both sides. See Docs/Files.md.

            OUTPUT
              The name the receiver saved the file under, on one line:
              sent FILE (SIZE) to PEER as NAME. Progress on standard error: a bar
              on a terminal, otherwise a line at each tenth.

            EXIT STATUS
              0 the receiver has the file; 2 no such peer within --timeout;
              3 the transfer failed: refused or declined, cancelled by the
              receiver, checksum mismatch, the peer gone; 64 bad input (no such file); 69 no DNS-SD
              daemon; 130 interrupted (the transfer is cancelled). See
              'chirp --help'.

            EXAMPLES
              A file to the receiver named lab-pc:
                chirp send-file results.tar.gz --to lab-pc
              Under another name:
                chirp send-file /tmp/out.bin --to lab-pc --as run-42.bin
            """)

    @Argument(help: ArgumentHelp("The file to send.", valueName: "path"))
    var path: String

    @Option(
        help: ArgumentHelp(
            "The receiving peer: its name, its peer id, or the first characters (at least 4) of its id.",
            valueName: "peer"))
    var to: String?

    @Option(name: .customLong("as"), help: ArgumentHelp("The name to offer the file under.", valueName: "name"))
    var offeredName: String?

    @Option(help: ArgumentHelp("The service type to join.", valueName: "type"))
    var type: String = FileTransfers.defaultServiceType

    @OptionGroup var options: PeerCommandOptions

    func validate() throws {
        _ = try validateServiceType(type)
        if to == nil && options.join.connect == nil { throw ValidationError("name the receiver with --to PEER") }
        try options.checkPeerSelection(to)
    }

    func run() async throws {
        let logger = options.common.makeLogger()
        let serviceType = try validateServiceType(type)
        try await CommandRunner.run { try await sendFile(on: serviceType, logger: logger) }
    }

    private func sendFile(on serviceType: ServiceType, logger: Logger) async throws -> ExitStatus {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else {
            throw CLIError.badInput("\(path): no such file")
        }
        let timeout = options.common.timeout(default: 10)
        return try await PeerSession.run(
            command: "send-file", serviceType: serviceType, options: options, logger: logger
        ) { session in
            let peer = try await session.findPeer(to.map(PeerSelector.init), within: timeout)
            let files = try FileTransfers(transceiver: session.transceiver)
            let transfer: OutgoingFileTransfer
            do {
                transfer = try files.send(file: path, named: offeredName, to: peer)
            } catch let error as FileTransferError {
                throw CLIError.badInput(error.reason)
            }
            let shown = Task {
                var display = ProgressDisplay(label: "sending \(transfer.name)")
                for await progress in transfer.progress { display.show(progress) }
            }
            let savedAs: String
            do {
                savedAs = try await withTaskCancellationHandler {
                    try await transfer.result()
                } onCancel: {
                    transfer.cancel()
                }
            } catch let error as FileTransferError {
                await shown.value
                if error.code == .cancelled { throw CancellationError() }
                throw CLIError.peerFailure(error.reason)
            }
            await shown.value
            Terminal.line(
                "sent \(transfer.name) (\(ProgressDisplay.bytes(transfer.size))) to \(peer.name) as \(savedAs)")
            return .success
        }
    }
}
