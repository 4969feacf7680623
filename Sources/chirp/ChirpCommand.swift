// The root of the `chirp` tool. This minimal root exists so that `chirp logs` can be built and tested on its own;
// the full tool (browse, listen, send, ping, ...) supplies its own root, which lists LogsCommand among its subcommands.
import ArgumentParser

@main
struct ChirpCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chirp",
        abstract: "See and poke a Chirp network from a terminal.",
        subcommands: [LogsCommand.self])
}
