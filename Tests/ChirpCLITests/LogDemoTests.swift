import Foundation
import Testing

/// The `logdemo` example: what it says when it cannot be found.
extension ChirpCLITests {
    @Suite(.timeLimit(.minutes(3))) struct LogDemo {
        @Test func noDaemonIs69AtOnce() async throws {
            let logdemo = try await TestProcess(
                binaryPath("logdemo"),
                ["--name", "shop", "--service", uniqueServiceType(), "--interface", "lo", "--plain"],
                environment: ExitStatuses.noDaemon, input: .closed)
            defer { logdemo.kill() }
            // "At once": it would otherwise log and serve forever (the bound is generous for a loaded machine).
            #expect(try await logdemo.waitForExit(timeout: .seconds(20)) == 69, "\(logdemo.transcript)")
            #expect(logdemo.standardError.contains("logdemo: error: no DNS-SD daemon answers"), "\(logdemo.transcript)")
            #expect(logdemo.standardError.contains("logdemo: hint: start it with"), "\(logdemo.transcript)")
        }

        @Test func aBadNameIs64() async throws {
            let logdemo = try await TestProcess(binaryPath("logdemo"), ["--name", ""], input: .closed)
            defer { logdemo.kill() }
            #expect(try await logdemo.waitForExit(timeout: .seconds(20)) == 64, "\(logdemo.transcript)")
            #expect(logdemo.standardError.hasPrefix("logdemo: error: --name: a name cannot be empty"))
        }
    }
}
