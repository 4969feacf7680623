// listrctl: drives a running listr from the terminal.
//
//     listrctl item add "buy milk"
//     listrctl item list --peer kitchen
//     listrctl store dump backup.json --timeout 3
import ArgumentParser
import ChirpCommands
import ListrCommands

@main
struct Listrctl: AsyncParsableCommand {
    static func main() async { await CommandLineTool.main(Self.self) }

    static let configuration = CommandConfiguration(
        commandName: "listrctl",
        abstract: "Drive a running listr: list and change its items, dump or replace its store.",
        discussion: """
            listrctl finds the listr app through DNS-SD (the service type --service, default \
            \(ListrChannel.defaultServiceType)), sends one command, prints the reply and exits. Replies go to \
            standard output, errors to standard error (and, on a terminal, a note while it waits). When several \
            listr instances run, pick one with --peer NAME, or send to all with --all; when two share a name, \
            --peer takes the start of an id instead (at least 4 characters, as the list of candidates shows it). \
            When listr requires a shared secret, give the same one with the CHIRP_SECRET environment variable or \
            --secret-file PATH (never on the command line).

            EXAMPLES
              listrctl item add "buy milk"
              listrctl item list --peer kitchen
              listrctl item done 3 --all
              listrctl store dump backup.json
              listrctl store replace backup.json
              listrctl item list --secret-file ~/.listr-secret

            \(CommandExitCode.helpText)
            """,
        version: ToolVersion.current,
        subcommands: [ItemCommand.self, StoreCommand.self, PairCommand.self, DebugCommand.self])
}

struct PairCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pair",
        abstract: "Pair this device identity with listr: both show a code, you confirm on listr's side.",
        discussion: """
            Needs --identity NAME (or CHIRP_IDENTITY) here and a listr started with --identity and \
            --allow-pairing. listrctl prints a 6-digit code; listr shows one too and asks. Say yes there only \
            when the codes are the same: a device in the middle would make them differ. Once paired, listr \
            trusts this identity (with its --pair-permissions) and this identity pins listr. --timeout bounds \
            the search for listr; the person at listr then has 2 minutes to answer.

            EXAMPLES
              listrctl pair --identity laptop
              listrctl pair --identity laptop --peer kitchen

            \(exitCodesHelp)
            """)
    @OptionGroup var connection: ConnectionOptions<ListrChannel>

    func run() async throws { try await connection.pair() }
}

/// The exit codes, repeated in every subcommand's help.
let exitCodesHelp = CommandExitCode.helpText

struct ItemCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "item", abstract: "List, add, complete and remove items.",
        subcommands: [List.self, Add.self, Done.self, Remove.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the items, one a line: #ID [x] TITLE (x when done).", discussion: exitCodesHelp)
        @OptionGroup var connection: ConnectionOptions<ListrChannel>

        func run() async throws { try await connection.run(ListItems()) }
    }

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Add an item.", discussion: exitCodesHelp)
        @OptionGroup var connection: ConnectionOptions<ListrChannel>
        @Argument(
            help: ArgumentHelp(
                "The item's text (several words are joined with spaces): one line, at most 1000 bytes.",
                valueName: "TITLE"))
        var words: [String]

        var title: String { words.joined(separator: " ") }

        func validate() throws {
            if let problem = StoreFile.problem(withTitle: title) { throw ValidationError("TITLE: \(problem)") }
        }

        func run() async throws { try await connection.run(AddItem(title: title)) }
    }

    struct Done: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Mark an item as done.", discussion: exitCodesHelp)
        @OptionGroup var connection: ConnectionOptions<ListrChannel>
        @Argument(help: ArgumentHelp("The item's id, as `item list` shows it.", valueName: "ID"))
        var id: Int

        func validate() throws { if id < 1 { throw ValidationError("ID must be a positive number") } }
        func run() async throws { try await connection.run(CompleteItem(id: id)) }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove an item.", discussion: exitCodesHelp)
        @OptionGroup var connection: ConnectionOptions<ListrChannel>
        @Argument(help: ArgumentHelp("The item's id, as `item list` shows it.", valueName: "ID"))
        var id: Int

        func validate() throws { if id < 1 { throw ValidationError("ID must be a positive number") } }
        func run() async throws { try await connection.run(RemoveItem(id: id)) }
    }
}
