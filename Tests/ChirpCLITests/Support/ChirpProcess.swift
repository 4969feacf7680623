import Foundation
import Testing

/// Runs `chirp` with `arguments` (plus COLUMNS=100 for stable help text) as a ``TestProcess``.
func startChirp(_ arguments: [String], environment: [String: String?] = [:]) async throws -> TestProcess {
    try await TestProcess(binaryPath("chirp"), arguments, environment: ["COLUMNS": "100"].merging(environment) { $1 })
}

/// Runs `chirp` to its end, with `stdin` as its standard input; fails the test if it runs longer than `timeout`.
func runChirp(
    _ arguments: [String], environment: [String: String?] = [:], stdin: String? = nil, timeout: Duration = .seconds(30)
) async throws -> (status: Int32, process: TestProcess) {
    let process = try await startChirp(arguments, environment: environment)
    if let stdin { process.write(stdin) }
    process.closeInput()
    do {
        return (try await process.waitForExit(timeout: timeout), process)
    } catch {
        await process.stop()
        throw TimeoutError(
            what: "chirp \(arguments.joined(separator: " ")) to end\n\(process.transcript)", timeout: timeout)
    }
}

/// The URL of executable `name`, for a test that starts it with Foundation's `Process` because it needs what
/// ``TestProcess`` never does on purpose: an output pipe that nobody reads, or whose reader goes away.
func requireBinary(_ name: String) throws -> URL {
    let path = binaryPath(name)
    try requireExecutable(path)
    return URL(fileURLWithPath: path)
}

/// Starts `chirp send TYPE x {}` where no peer is, and waits until it waits for one (with its signal handling set up).
func startWaitingSend(_ type: String, sourceLocation: SourceLocation = #_sourceLocation) async throws -> TestProcess {
    let send = try await startChirp([
        "send", type, "x", "{}", "--timeout", "60", "--interface", "lo", "--log-level", "info"
    ])
    // The library logs "listening" once the command is waiting for a peer (signal handling is set up by then).
    #expect(await send.waitForError(containing: "listening"), "\(send.transcript)", sourceLocation: sourceLocation)
    return send
}
