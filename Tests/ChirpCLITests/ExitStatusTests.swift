import Chirp
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Each documented error case gives its exit status (Docs/CLI.md, `chirp --help`).
extension ChirpCLITests {
    @Suite struct ExitStatuses {
        /// Makes the DNS-SD client library find no daemon (Avahi's compat layer reaches avahi-daemon over the system
        /// D-Bus), without touching the daemon other tests use.
        static let noDaemon = ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/chirp-test-bus"]

        @Test(arguments: [
            ["send", "not_valid", "x", "{}"],
            ["send", "abcdefghijklmnop", "x", "{}"],
            ["send", "tvalid", "x", "{not json"],
            ["send", "tvalid", "x", "{}", "--timeout", "0"],
            ["send", "tvalid", "x", "{}", "--connect", "no-port-here"],
            ["send", "tvalid", "x", "{}", "--peer", "a", "--connect", "127.0.0.1:9"],
            ["ping", "tvalid", "--interface", "no-such-if0"],
            ["ping", "tvalid", "-c", "0"],
            ["listen", "tvalid", "--count", "0"],
            ["browse", "bad type"],
            ["frobnicate"]
        ])
        func badInputIs64(_ arguments: [String]) async throws {
            let (status, process) = try await runChirp(arguments)
            #expect(status == 64, "\(process.transcript)")
            #expect(process.standardOutput.isEmpty)
            #expect(!process.standardError.isEmpty)
        }

        @Test func invalidJSONOnStandardInputIs64AndNothingIsSent() async throws {
            let type = uniqueServiceType()
            let (status, process) = try await runChirp(
                ["send", type, "x", "-", "--interface", "lo"], stdin: "{\"text\": ")
            #expect(status == 64, "\(process.transcript)")
            #expect(process.standardError.contains("invalid JSON from standard input"), "\(process.transcript)")
            #expect(process.standardError.contains("nothing was sent"))
        }

        @Test(arguments: [
            ["send", "x", "{}", "--timeout", "1"],
            ["ping", "--timeout", "1"],
            ["browse", "--once", "--timeout", "1"],
            ["listen", "--count", "1", "--timeout", "1"]
        ])
        func nothingFoundInTimeIs2(_ arguments: [String]) async throws {
            let type = uniqueServiceType()
            let (status, process) = try await runChirp(
                [arguments[0], type] + arguments.dropFirst() + ["--interface", "lo"])
            #expect(status == 2, "\(process.transcript)")
            #expect(process.standardError.hasPrefix("chirp: error: "), "\(process.transcript)")
        }

        @Test func nothingAtConnectIs2() async throws {
            // Port 1 on loopback: nothing listens there (a privileged port no test binds).
            let type = uniqueServiceType()
            let (status, process) = try await runChirp([
                "send", type, "x", "{}", "--connect", "127.0.0.1:1", "--timeout", "3", "--interface", "lo"
            ])
            #expect(status == 2, "\(process.transcript)")
            #expect(process.standardError.contains("127.0.0.1:1"))
        }

        @Test func noResponderIsAPeerFailure3() async throws {
            let type = uniqueServiceType()
            try await withPeer(type, name: "mute") { _ in
                let (status, process) = try await runChirp([
                    "send", type, "test.question", "{}", "--request", "--interface", "lo"
                ])
                #expect(status == 3, "\(process.transcript)")
                #expect(process.standardError.contains("no responder"), "\(process.transcript)")
            }
        }

        @Test(arguments: [
            ["browse", "--once"], ["browse", "TYPE", "--once"], ["send", "TYPE", "x", "{}"], ["listen", "TYPE"],
            ["ping", "TYPE"]
        ])
        func noDaemonIs69(_ arguments: [String]) async throws {
            let type = uniqueServiceType()
            let (status, process) = try await runChirp(
                arguments.map { $0 == "TYPE" ? type : $0 } + ["--timeout", "10"], environment: Self.noDaemon)
            #expect(status == 69, "\(process.transcript)")
            #expect(process.standardError.contains("no DNS-SD daemon answers"), "\(process.transcript)")
            #expect(process.standardError.contains("start it with"), "\(process.transcript)")
        }

        @Test func interruptWhileWaitingIs130() async throws {
            let type = uniqueServiceType()
            let process = try await startWaitingSend(type)
            process.signal(SIGINT)
            #expect(try await process.waitForExit() == 130, "\(process.transcript)")
        }
    }
}
