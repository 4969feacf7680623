import ChirpTestSupport
import Foundation
import Testing

/// `chirp console` runs the chirp-console found next to `chirp`: here, where this package's build put both (the test
/// target depends on the `chirp` product for that). `chirp console` without a chirp-console is in ChirpCLITests.
@Suite(.timeLimit(.minutes(2))) struct ChirpConsoleCommandTests {
    /// Runs `chirp ARGUMENTS` to its end; its status and the process, whose output is all collected.
    func runChirp(_ arguments: [String]) async throws -> (status: Int32, process: TestProcess) {
        let process = try await TestProcess(binaryPath("chirp"), arguments)
        process.closeInput()
        do {
            return (try await process.waitForExit(timeout: .seconds(30)), process)
        } catch {
            await process.stop()
            throw error
        }
    }

    @Test func chirpConsoleStartsChirpConsoleWithTheSameArguments() async throws {
        // chirp-console's own validation answers: the arguments reached it.
        let (status, process) = try await runChirp(["console", "--listen", "not-an-address"])
        #expect(status == 64)
        #expect(process.standardError.contains("--listen: expected HOST:PORT"), "\(process.standardError)")
        #expect(process.standardError.contains("chirp-console"))
    }

    @Test func chirpConsoleRefusesRetentionLimitsThatWouldOverflow() async throws {
        // Hours and MiB become seconds and bytes: values past 100 years or 1 TiB are refused, not overflowed.
        for (option, value, shown) in [
            ("--max-hours", "9999999999999999", "--max-hours must be 1 to 876000"),
            ("--max-megabytes", "99999999999999", "--max-megabytes must be 1 to 1048576"),
            ("--max-hours", "0", "--max-hours must be 1 to 876000")
        ] {
            let (status, process) = try await runChirp(["console", option, value])
            #expect(status == 64, "\(option) \(value): \(process.standardError)")
            #expect(process.standardError.contains(shown), "\(process.standardError)")
        }
    }
}
