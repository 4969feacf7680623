import Chirp
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension ChirpCLITests {
    /// A closed output pipe ends a streaming command at once, quietly, with status 0 (Docs/CLI.md), without waiting
    /// for more output: `chirp listen TYPE | head -1` with a single message, `chirp browse TYPE | head -1`.
    @Suite struct ClosedPipe {
        /// How long the command may take to notice, on a loaded machine. Nothing else happens meanwhile: no message,
        /// no peer coming or going, so only the reader's departure can end it.
        static let bound: Duration = .seconds(10)

        @Test func listenEndsWhenItsReaderGoesAwayAfterASingleMessage() async throws {
            let type = uniqueServiceType()
            try await withPeer(type, name: "sender") { sender in
                let run = try PipedChirp(["listen", type, "--interface", "lo", "--name", "listener"])
                defer { run.stop() }
                let listener = try #require(await waitForPeer(named: "listener", on: sender))
                try await sender.send(ChatText(text: "the only message"), to: listener)
                try await run.expectEndsQuietlyOnceItsReaderGoesAway(after: "the only message", within: Self.bound)
            }
        }

        @Test(arguments: [[], ["--json"]])
        func browseEndsWhenItsReaderGoesAway(_ options: [String]) async throws {
            let type = uniqueServiceType()
            try await withPeer(type, name: "seen") { _ in
                let run = try PipedChirp(["browse", type, "--interface", "lo"] + options)
                defer { run.stop() }
                try await run.expectEndsQuietlyOnceItsReaderGoesAway(after: "seen", within: Self.bound)
            }
        }
    }
}

/// `chirp` started with its standard output into a pipe the test reads and then closes, as `| head -1` does
/// (Foundation's `Process`: a ``TestProcess`` always reads its output to the end).
final class PipedChirp {
    let process: Process
    let output: Pipe
    let errors: Pipe

    init(_ arguments: [String]) throws {
        process = Process()
        process.executableURL = try requireBinary("chirp")
        process.arguments = arguments
        output = Pipe()
        errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
    }

    /// Kills chirp if it still runs.
    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    /// Reads what chirp prints until it contains `text`, closes the pipe, and expects chirp to end within `bound`,
    /// with status 0 and nothing on standard error.
    func expectEndsQuietlyOnceItsReaderGoesAway(
        after text: String, within bound: Duration, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let reader = output.fileHandleForReading
        var printed = Data()
        while !String(decoding: printed, as: UTF8.self).contains(text) {
            let chunk = try #require(
                await firstChunk(of: reader, timeout: .seconds(30)), "chirp printed \(text) within 30 s",
                sourceLocation: sourceLocation)
            try #require(!chunk.isEmpty, "chirp ended before printing \(text)", sourceLocation: sourceLocation)
            printed += chunk
        }
        try reader.close()  // `head -1` has its line, and exits
        let process = self.process
        let ended = await eventually(timeout: bound) { !process.isRunning }
        #expect(
            ended, "chirp kept running \(bound) with nobody reading its output", sourceLocation: sourceLocation)
        guard ended else { return }
        #expect(process.terminationReason == .exit, sourceLocation: sourceLocation)
        #expect(process.terminationStatus == 0, sourceLocation: sourceLocation)
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(stderr.isEmpty, "quietly: \(stderr)", sourceLocation: sourceLocation)
    }
}
