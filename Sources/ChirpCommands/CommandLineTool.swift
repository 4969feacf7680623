import ArgumentParser
import Foundation

/// The entry point of a command-line tool built with swift-argument-parser, as this package's tools use it (`chirp`,
/// `listrctl`, `listr`, `chat`, `logdemo`): parses and runs the root command the way their users expect, and reports
/// every error in one style. Use it for an app's own CLI beside ``ConnectionOptions``.
///
/// ```swift
/// @main
/// struct Listrctl: AsyncParsableCommand {
///     static func main() async { await CommandLineTool.main(Self.self) }
/// }
/// ```
///
/// On top of swift-argument-parser's own `main()`:
/// - errors, its own included, read `TOOL: error: MESSAGE` then `TOOL: hint: see 'TOOL SUBCOMMAND --help'` on
///   standard error (Docs/CLI.md), instead of `Error: ...` followed by the usage;
/// - options may come before the subcommand, as users of git and kubectl expect: `listrctl --service X item list`
///   is read as `listrctl item list --service X`;
/// - a negative number after a long option is its value: `--timeout -1` is `--timeout=-1` (then refused with a
///   sentence by the option's validation), not "Missing value for '--timeout'";
/// - `TOOL help NAME` with a NAME that is no subcommand is a usage error (64), not the top-level help.
public enum CommandLineTool {
    /// Parses `arguments` as `Root`, runs the command, and exits with its status: 0, the status the command threw
    /// (`ExitCode`), 64 for a usage error, 1 for any other error.
    public static func main<Root: ParsableCommand>(
        _ root: Root.Type, arguments: [String] = Array(CommandLine.arguments.dropFirst())
    ) async -> Never {
        let tool = StandardStreams.programName
        let (normalized, path) = normalize(arguments, root: Root.self)
        let hint = "see '\(([tool] + path).joined(separator: " ")) --help'"
        if let unknown = unknownHelpTopic(normalized, root: Root.self) {
            StandardStreams.error(unknown, hint: "see '\(tool) --help'")
            exit(ExitCode.validationFailure.rawValue)
        }
        do {
            let command = try Root.parseAsRoot(normalized)
            if let command = command as? any AsyncParsableCommand {
                try await run(command)
            } else {
                try run(command)
            }
            exit(0)
        } catch {
            let code = Root.exitCode(for: error)
            if code == .success {
                // --help, help SUBCOMMAND, --version: the text on standard output.
                StandardStreams.output(Root.fullMessage(for: error) + "\n")
                exit(0)
            }
            let message = Root.message(for: error).trimmingCharacters(in: .whitespacesAndNewlines)
            if error is ExitCode || message.isEmpty {
                exit(code.rawValue)  // reported already, by the command itself
            }
            StandardStreams.error(Self.sentence(message), hint: code == .validationFailure ? hint : nil)
            exit(code.rawValue)
        }
    }

    private static func run<C: AsyncParsableCommand>(_ command: C) async throws {
        var command = command
        try await command.run()
    }

    private static func run<C: ParsableCommand>(_ command: C) throws {
        var command = command
        try command.run()
    }

    /// The arguments with options moved after the subcommand path and negative values joined to their option;
    /// also the subcommand path (for the hint).
    static func normalize(_ arguments: [String], root: any ParsableCommand.Type) -> (
        arguments: [String], path: [String]
    ) {
        // `--timeout -1` -> `--timeout=-1`.
        var joined: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "--" {
                joined += arguments[index...]
                break
            }
            if argument.hasPrefix("--"), !argument.contains("="), index + 1 < arguments.count,
                Self.isNegativeNumber(arguments[index + 1])
            {
                joined.append(argument + "=" + arguments[index + 1])
                index += 2
                continue
            }
            joined.append(argument)
            index += 1
        }

        // Options before the subcommand: collected until the next subcommand name, then put after the whole path.
        var command: any ParsableCommand.Type = root
        var path: [String] = []
        var leading: [String] = []
        var position = 0
        while position < joined.count {
            let token = joined[position]
            if token == "--" { break }
            if let sub = subcommand(named: token, of: command) {
                command = sub
                path.append(token)
                position += 1
                continue
            }
            guard token.hasPrefix("-"), token != "-", !command.configuration.subcommands.isEmpty else { break }
            leading.append(token)
            // The value of `--service X`: a next token that is neither an option nor a subcommand name.
            if !token.contains("="), position + 1 < joined.count {
                let next = joined[position + 1]
                if !next.hasPrefix("-"), subcommand(named: next, of: command) == nil {
                    leading.append(next)
                    position += 1
                }
            }
            position += 1
        }
        guard !leading.isEmpty, !path.isEmpty, command.configuration.subcommands.isEmpty else {
            return (joined, path)
        }
        // The leaf subcommand takes the options, before its own arguments.
        return (path + leading + joined[position...], path)
    }

    /// `help NAME...` naming something that is not a subcommand: the error message; else `nil`.
    static func unknownHelpTopic(_ arguments: [String], root: any ParsableCommand.Type) -> String? {
        guard arguments.first == "help" else { return nil }
        var command: any ParsableCommand.Type = root
        for name in arguments.dropFirst() where !name.hasPrefix("-") {
            guard let sub = subcommand(named: name, of: command) else {
                let known = command.configuration.subcommands.map { $0._commandName }
                return "no command '\(name)'"
                    + (known.isEmpty ? "" : "; the commands are \(known.joined(separator: ", "))")
            }
            command = sub
        }
        return nil
    }

    private static func subcommand(named name: String, of command: any ParsableCommand.Type) -> (
        any ParsableCommand.Type
    )? {
        command.configuration.subcommands.first { $0._commandName == name || $0.configuration.aliases.contains(name) }
    }

    private static func isNegativeNumber(_ text: String) -> Bool {
        guard text.hasPrefix("-"), text.count > 1 else { return false }
        return Double(text) != nil
    }

    /// A message as a sentence in the tool's style: argument-parser's own start with a capital letter.
    private static func sentence(_ message: String) -> String {
        var text = message
        if text.hasPrefix("Error: ") { text.removeFirst("Error: ".count) }
        guard let first = text.first, first.isUppercase, text.dropFirst().first?.isLowercase == true else {
            return text
        }
        return first.lowercased() + text.dropFirst()
    }
}
