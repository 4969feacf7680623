import ArgumentParser
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `chirp console`: starts `chirp-console`, its own executable (so that `chirp` itself stays small and quick to start),
/// with the same arguments.
struct ConsoleCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "console",
        abstract:
            "Start Chirp Console (chirp-console): the logs and HTTP calls of the apps on the network, in a browser.",
        discussion: """
            Runs the chirp-console executable found next to chirp (or on PATH) with the arguments given;
            see 'chirp-console --help' and Docs/Console.md. It replaces this process.

            EXAMPLES
              chirp console
              chirp console --listen 127.0.0.1:0 --interface lo
            """)

    @Argument(parsing: .allUnrecognized, help: "Arguments for chirp-console.")
    var arguments: [String] = []

    func run() throws {
        let own = URL(fileURLWithPath: CommandLine.arguments.first ?? "chirp").resolvingSymlinksInPath()
        let sibling = own.deletingLastPathComponent().appendingPathComponent("chirp-console").path
        let path: String
        if FileManager.default.isExecutableFile(atPath: sibling) {
            path = sibling
        } else if let found = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":")
            .map({ "\($0)/chirp-console" }).first(where: FileManager.default.isExecutableFile(atPath:))
        {
            path = found
        } else {
            Terminal.error(
                "chirp-console not found next to chirp or on PATH",
                hint:
                    "build it in Chirp's checkout (`swift build --package-path Console`); put it next to chirp or on PATH"
            )
            throw ExitCode(69)
        }
        let argv = [path] + arguments
        var cArguments = argv.map { strdup($0) } + [nil]
        execv(path, &cArguments)
        // Only reached when exec failed.
        Terminal.error("cannot start \(path): \(String(cString: strerror(errno)))")
        throw ExitCode(69)
    }
}
