import ArgumentParser
import Chirp
import ChirpFiles
import Foundation
import Logging
import NIOConcurrencyHelpers

/// `chirp receive-files DIR`: receives the files peers send (chirp send-file) into a directory, until Ctrl-C.
struct ReceiveFilesCommand: AsyncParsableCommand, Sendable {
    static let configuration = CommandConfiguration(
        commandName: "receive-files",
        abstract: "Receive the files peers send (chirp send-file) into a directory.",
        discussion: """
            chirp joins TYPE (chirp-files by default) as a peer that senders find
            by its name (--name; chirp-receive-files-HOST-PID by default) and
            saves each file offered into DIR: written to DIR/.chirp-partial first,
            moved into DIR once every byte arrived and the SHA-256 matches the
            sender's. Names are sanitised (no path, no control characters, no
            leading dot) and a file never replaces another: the new one is saved
            as NAME (1).EXT, NAME (2).EXT, ... A transfer whose connection drops
            resumes from the partial file when the sender offers it again. With
            --from, files from other peers are declined. Runs until Ctrl-C, which
            stops the transfers in progress on both sides and keeps their partial
            files: the same file sent again resumes. Partial files untouched for 7
            days (and the oldest beyond 64 GiB) are deleted when it starts. Apps
            see it as a peer like any other. See Docs/Files.md.

            OUTPUT
              One line per file received: received NAME (SIZE) from PEER: PATH
              (a failed or declined one on standard error). Progress on standard
              error: a bar on a terminal, otherwise a line at each tenth.

            EXIT STATUS
              0 stopped by Ctrl-C; 64 DIR is not a directory; 69 no DNS-SD
              daemon. See 'chirp --help'.

            EXAMPLES
              Receive into ~/Downloads under the name lab-pc:
                chirp receive-files ~/Downloads --name lab-pc
              Only files lab-pc or build-01 send:
                chirp receive-files ~/inbox --from lab-pc --from build-01
            """)

    @Argument(help: ArgumentHelp("The directory files are saved in.", valueName: "dir"))
    var directory: String

    @Option(help: ArgumentHelp("The service type to join.", valueName: "type"))
    var type: String = FileTransfers.defaultServiceType

    @Option(help: ArgumentHelp("The largest file accepted, in MiB.", valueName: "mib"))
    var maxSize: Int64 = FileTransferConfiguration().maximumFileSize >> 20

    @Option(
        name: .customLong("from"),
        help: ArgumentHelp(
            "Accept files from this peer only (its name or peer id; repeat for several); decline the others.",
            valueName: "peer"))
    var senders: [String] = []

    @OptionGroup var options: PeerCommandOptions

    func validate() throws {
        _ = try validateServiceType(type)
        guard maxSize > 0 else { throw ValidationError("--max-size must be positive") }
    }

    func run() async throws {
        let logger = options.common.makeLogger()
        let serviceType = try validateServiceType(type)
        try await CommandRunner.run { try await receive(on: serviceType, logger: logger) }
    }

    private func receive(on serviceType: ServiceType, logger: Logger) async throws -> ExitStatus {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw CLIError.badInput("\(directory) is not a directory")
        }
        var configuration = FileTransferConfiguration()
        configuration.maximumFileSize = maxSize << 20
        let directory = self.directory
        return try await PeerSession.run(
            command: "receive-files", serviceType: serviceType, options: options, logger: logger
        ) { session in
            let files = try FileTransfers(transceiver: session.transceiver, configuration: configuration)
            let offers: AsyncStream<IncomingFileTransfer>
            let senders = Set(self.senders)
            do {
                offers = try files.receive(into: directory) { offer in
                    if senders.isEmpty || senders.contains(offer.sender.name) || senders.contains(offer.sender.id) {
                        return true
                    }
                    Terminal.warning(
                        "declined \(offer.name) (\(ProgressDisplay.bytes(offer.size))) from \(offer.sender.name):"
                            + " not a --from peer")
                    return false
                }
            } catch let error as FileTransferError {
                throw CLIError.badInput(error.reason)
            }
            Terminal.plainError(
                "receiving files into \(directory) as \(session.transceiver.localPeer.name) on \(session.typeText)")
            let active = NIOLockedValueBox<[UUID: IncomingFileTransfer]>([:])
            await withTaskCancellationHandler {
                await withTaskGroup(of: Void.self) { group in
                    for await incoming in offers {
                        active.withLockedValue { $0[incoming.id] = incoming }
                        group.addTask {
                            await Self.follow(incoming)
                            active.withLockedValue { _ = $0.removeValue(forKey: incoming.id) }
                        }
                    }
                }
            } onCancel: {
                for incoming in active.withLockedValue({ Array($0.values) }) {
                    incoming.cancel(keepingPartialFile: true)
                }
            }
            // Ctrl-C: the transfers in progress were stopped (their senders told, their partial files kept for a
            // resumption) before the transceiver stops.
            for incoming in active.withLockedValue({ Array($0.values) }) { _ = try? await incoming.result() }
            return .success
        }
    }

    private static func follow(_ incoming: IncomingFileTransfer) async {
        let sender = incoming.sender.name
        let shown = Task {
            var display = ProgressDisplay(label: "receiving \(incoming.name) from \(sender)")
            for await progress in incoming.progress { display.show(progress) }
        }
        do {
            let path = try await incoming.result()
            await shown.value
            Terminal.line("received \(incoming.name) (\(ProgressDisplay.bytes(incoming.size))) from \(sender): \(path)")
        } catch {
            await shown.value
            Terminal.warning("\(incoming.name) from \(sender) failed: \(error)")
        }
    }
}
