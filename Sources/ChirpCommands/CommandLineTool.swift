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
/// - a negative number where an argument is expected is that argument: `listrctl item done -1` is refused by the
///   command's validation ("ID must be a positive number"), not "missing expected argument";
/// - a mistyped subcommand is named, with the closest one: `listrctl item lst` says "no command 'lst' in 'listrctl
///   item'" and "did you mean 'listrctl item list'?";
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
        let command: any ParsableCommand
        do {
            command = try Root.parseAsRoot(normalized)
        } catch {
            let message = Root.message(for: error)
            if Root.exitCode(for: error) == .validationFailure, message.contains("nexpected argument"),
                let unknown = unknownSubcommand(normalized, root: Root.self)
            {
                StandardStreams.error(unknown.message, hint: unknown.hint)
                exit(ExitCode.validationFailure.rawValue)
            }
            report(error, root: Root.self, hint: hint)
        }
        do {
            if let command = command as? any AsyncParsableCommand {
                try await run(command)
            } else {
                try run(command)
            }
            exit(0)
        } catch {
            report(error, root: Root.self, hint: hint)
        }
    }

    /// Reports `error` (or prints the help or version it stands for) and exits with its status.
    private static func report<Root: ParsableCommand>(_ error: any Error, root: Root.Type, hint: String) -> Never {
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
            return (negativeArguments(joined, leaf: command, after: path.count), path)
        }
        // The leaf subcommand takes the options, before its own arguments.
        return (negativeArguments(path + leading + joined[position...], leaf: command, after: path.count), path)
    }

    /// `arguments` with the leaf command's positional arguments after a `--` when one of them is a negative number
    /// (`item done -1` -> `item done -- -1`), so that it is read as the argument it is rather than as an unknown
    /// option; unchanged otherwise. The leaf's options (and which take a value) come from swift-argument-parser's
    /// description of the command. `start` is where the leaf's own arguments begin.
    static func negativeArguments(_ arguments: [String], leaf: any ParsableCommand.Type, after start: Int) -> [String] {
        guard start <= arguments.count else { return arguments }
        let own = arguments[start...]
        let beforeTerminator = own.prefix { $0 != "--" }
        guard beforeTerminator.contains(where: isNegativeNumber) else { return arguments }
        let takesValue = optionsTakingValues(of: leaf)
        var options: [String] = []
        var positionals: [String] = []
        var index = beforeTerminator.startIndex
        while index < beforeTerminator.endIndex {
            let token = beforeTerminator[index]
            index += 1
            guard token.hasPrefix("-"), token != "-", !isNegativeNumber(token) else {
                positionals.append(token)
                continue
            }
            options.append(token)
            if !token.contains("="), takesValue.contains(token), index < beforeTerminator.endIndex {
                options.append(beforeTerminator[index])  // its value, negative or not
                index += 1
            }
        }
        guard positionals.contains(where: isNegativeNumber) else { return arguments }
        let afterTerminator = own[beforeTerminator.endIndex...].dropFirst()
        return Array(arguments[..<start]) + options + ["--"] + positionals + afterTerminator
    }

    /// The spellings (`--timeout`, `-c`) of the options of `command` that take a value, from swift-argument-parser's
    /// JSON description of it.
    private static func optionsTakingValues(of command: any ParsableCommand.Type) -> Set<String> {
        struct Tool: Decodable {
            struct Command: Decodable { var arguments: [Argument]? }
            struct Argument: Decodable {
                struct Name: Decodable {
                    var kind: String
                    var name: String
                }
                var kind: String
                var names: [Name]?
            }
            var command: Command
        }
        guard let tool = try? JSONDecoder().decode(Tool.self, from: Data(command._dumpHelp().utf8)) else { return [] }
        var spellings: Set<String> = []
        for argument in tool.command.arguments ?? [] where argument.kind == "option" {
            for name in argument.names ?? [] {
                spellings.insert((name.kind == "long" ? "--" : "-") + name.name)
            }
        }
        return spellings
    }

    /// For arguments that name a subcommand that does not exist (`listrctl item lst`): the error, and a hint with the
    /// closest subcommand when one is close; `nil` when the arguments name no unknown subcommand.
    static func unknownSubcommand(_ arguments: [String], root: any ParsableCommand.Type) -> (
        message: String, hint: String
    )? {
        let tool = StandardStreams.programName
        var command: any ParsableCommand.Type = root
        var path = [tool]
        var index = 0
        while index < arguments.count {
            let token = arguments[index]
            index += 1
            if token == "--" { return nil }
            if token.hasPrefix("-") {
                // An option's value: a next token that is neither an option nor a subcommand name (as normalize()).
                if !token.contains("="), index < arguments.count, !arguments[index].hasPrefix("-"),
                    subcommand(named: arguments[index], of: command) == nil
                {
                    index += 1
                }
                continue
            }
            let subcommands = command.configuration.subcommands
            guard !subcommands.isEmpty else { return nil }
            if let sub = subcommand(named: token, of: command) {
                command = sub
                path.append(token)
                continue
            }
            let names = subcommands.filter { $0.configuration.shouldDisplay }.map { $0._commandName }
            let message =
                "no command '\(token)' in '\(path.joined(separator: " "))'; the commands are "
                + names.joined(separator: ", ")
            let closest = names.map { (name: $0, distance: editDistance($0, token)) }
                .filter { $0.distance <= max(1, min(2, $0.name.count / 3)) || $0.name.hasPrefix(token) }
                .min { $0.distance < $1.distance }
            let help = "see '\(path.joined(separator: " ")) --help'"
            guard let closest else { return (message, help) }
            return (message, "did you mean '\((path + [closest.name]).joined(separator: " "))'? " + help)
        }
        return nil
    }

    /// The Levenshtein distance between `a` and `b`, in characters.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
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
