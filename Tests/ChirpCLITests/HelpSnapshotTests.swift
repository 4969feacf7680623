import Foundation
import Testing

/// `chirp --help` and every subcommand's help, compared with the committed text in `__Snapshots__/`.
/// Run with `UPDATE_SNAPSHOTS=1` to rewrite the files after changing help text on purpose (then review the diff).
extension ChirpCLITests {
    @Suite struct HelpSnapshots {
        static let snapshots = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "__Snapshots__")

        @Test(arguments: [
            ["--help"], ["browse", "--help"], ["listen", "--help"], ["send", "--help"], ["ping", "--help"],
            ["logs", "--help"], ["send-file", "--help"], ["receive-files", "--help"], ["id", "--help"],
            ["trust", "--help"], ["trust", "add", "--help"]
        ])
        func helpMatchesSnapshot(_ arguments: [String]) async throws {
            let (status, process) = try await runChirp(arguments)
            #expect(status == 0, "\(process.transcript)")
            let name = (["chirp"] + arguments.filter { $0 != "--help" }).joined(separator: "-") + ".txt"
            let file = Self.snapshots.appendingPathComponent(name)
            let actual = process.standardOutput
            if ProcessInfo.processInfo.environment["UPDATE_SNAPSHOTS"] == "1" {
                try FileManager.default.createDirectory(at: Self.snapshots, withIntermediateDirectories: true)
                try actual.write(to: file, atomically: true, encoding: .utf8)
                return
            }
            guard let expected = try? String(contentsOf: file, encoding: .utf8) else {
                Issue.record("no snapshot \(name): run the tests with UPDATE_SNAPSHOTS=1 to record it")
                return
            }
            #expect(
                actual == expected,
                "help text of `chirp \(arguments.joined(separator: " "))` changed; if on purpose, rerun with UPDATE_SNAPSHOTS=1 and review the diff of \(name)"
            )
        }

        @Test func everyExampleUsesAnExistingSubcommand() async throws {
            let (_, process) = try await runChirp(["--help"])
            let examples = process.standardOutput.split(separator: "\n").filter {
                $0.trimmingCharacters(in: .whitespaces).hasPrefix("chirp ")
            }
            #expect(!examples.isEmpty)
            for line in examples {
                let words = line.split(separator: " ")
                #expect(
                    ["browse", "listen", "send", "ping", "logs", "console", "send-file", "receive-files", "id", "trust"]
                        .contains(
                            String(words[1])), "\(line)")
            }
        }
    }
}
