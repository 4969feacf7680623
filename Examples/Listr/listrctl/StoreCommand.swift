import ArgumentParser
import Chirp
import ChirpCommands
import ChirpSupport
import Foundation
import ListrCommands

struct StoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store", abstract: "Save the app's whole store to a file, or replace it from one.",
        subcommands: [Dump.self, Replace.self])

    struct Dump: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Save the app's store to PATH (written atomically: never a partial file).",
            discussion: "PATH - writes the store to standard output instead.\n\n" + exitCodesHelp)
        @OptionGroup var connection: ConnectionOptions<ListrChannel>
        @Argument(help: ArgumentHelp("Where to save the store.", valueName: "PATH"))
        var path: String

        func validate() throws {
            if path.isEmpty { throw ValidationError("PATH needs a file name") }
            if connection.all { throw ValidationError("store dump saves one app's store: use --peer NAME, not --all") }
        }

        func run() async throws {
            let path = self.path
            try await connection.run(DumpStore()) { reply in
                guard case .data(let bytes) = reply.response else {
                    throw ValidationError("\(reply.app.name) did not send a store")
                }
                // Never save something that is not a store: a newer or broken app would otherwise leave a file
                // that `store replace` refuses later.
                let file = try StoreFile.decode(bytes)
                if path == "-" {
                    StandardStreams.output(bytes)  // quietly done on a closed pipe
                } else {
                    try AtomicFile.write(bytes, to: path)
                    print(
                        "saved the store of \(UntrustedText.escaped(reply.label)) to \(path): \(file.items.count) items, \(bytes.count) bytes"
                    )
                }
            }
        }
    }

    struct Replace: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Replace the app's store with the one in PATH.",
            discussion: """
                The file is checked here first, then again by the app; a file that is not a valid store \
                (exit code 64 here, 1 from the app) changes nothing.

                \(exitCodesHelp)
                """)
        @OptionGroup var connection: ConnectionOptions<ListrChannel>
        @Argument(help: ArgumentHelp("A store file, as `store dump` saves it.", valueName: "PATH"))
        var path: String

        func validate() throws {
            _ = try Self.read(path)
        }

        func run() async throws {
            try await connection.run(ReplaceStore(contents: try Self.read(path)))
        }

        /// The file's bytes, once they are known to be a valid store.
        static func read(_ path: String) throws -> Data {
            let bytes: Data
            do {
                bytes = try Data(contentsOf: URL(fileURLWithPath: path))
            } catch {
                throw ValidationError("cannot read \(path): \((error as NSError).localizedDescription)")
            }
            do {
                _ = try StoreFile.decode(bytes)
            } catch {
                throw ValidationError("\(path) is \(error); the app's store was not changed")
            }
            return bytes
        }
    }
}

/// Commands for tests, not shown in --help.
struct DebugCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "debug", abstract: "Commands for tests.", shouldDisplay: false, subcommands: [Hold.self])

    struct Hold: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Ask the app (run with --enable-debug-commands) to wait SECONDS before it answers.")
        @OptionGroup var connection: ConnectionOptions<ListrChannel>
        @Argument var seconds: Double

        func run() async throws { try await connection.run(HoldCommand(seconds: seconds)) }
    }
}
