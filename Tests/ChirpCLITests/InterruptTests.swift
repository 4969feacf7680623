import Chirp
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// SIGINT and SIGTERM, as Docs/CLI.md promises: 130 for a command cut off while it waits (for a peer, or a reply),
/// 0 for the commands meant to be stopped that way (browse, listen), and ping's summary.
extension ChirpCLITests {
    @Suite struct Interrupts {
        /// How long a signalled command may take to end on a loaded machine (it says goodbye to its peers first).
        static let bound: Duration = .seconds(10)

        @Test(arguments: [SIGINT, SIGTERM])
        func sendRequestIsInterruptedWhileItWaitsForTheReply(signal: Int32) async throws {
            let type = uniqueServiceType()
            let asked = Collected<String>()
            // A responder that never answers (as listr's listr.debug.hold does for a while).
            let hold: (Transceiver) throws -> Void = { transceiver in
                try transceiver.respond(to: Question.self) { question, _ async throws -> Answer in
                    asked.append(question.text)
                    try await Task.sleep(for: .seconds(600))
                    return Answer(text: "too late")
                }
            }
            // chirp send is a tool: the peer lists it, and reports it leaving, because it asks for tools.
            try await withPeer(type, name: "holder", includesTools: true, configure: hold) { peer in
                let events = peer.makeEvents()
                let send = try await startChirp([
                    "send", type, "test.question", #"{"text":"wait"}"#, "--request", "--name", "asker", "--interface",
                    "lo", "--timeout", "120"
                ])
                try await asked.waitForCount(1)  // the request is in flight: chirp waits for the reply
                send.signal(signal)
                let status = try await send.waitForExit(timeout: Self.bound)
                #expect(status == 130, "\(send.transcript)")
                #expect(send.standardOutput.isEmpty, "\(send.transcript)")
                #expect(!send.standardError.contains("error"), "interrupted quietly: \(send.transcript)")
                // It said goodbye: the peer sees it leave at once, not at a heartbeat timeout.
                let left = await first(of: events, timeout: .seconds(20)) { event in
                    if case .peerDisconnected(let gone) = event { return gone.name == "asker" }
                    return false
                }
                #expect(left != nil)
            }
        }

        @Test(arguments: [SIGINT, SIGTERM])
        func listenAndBrowseAreStoppedWithStatus0(signal: Int32) async throws {
            let type = uniqueServiceType()
            try await withPeer(type, name: "present") { peer in
                let listen = try await startChirp(["listen", type, "--interface", "lo", "--name", "ears"])
                let browse = try await startChirp(["browse", type, "--interface", "lo"])
                // Both are running: listen has connected, browse has printed the peer.
                #expect(await waitForPeer(named: "ears", on: peer) != nil, "\(listen.transcript)")
                try await browse.waitForLine(containing: "present")
                for process in [listen, browse] {
                    process.signal(signal)
                    #expect(try await process.waitForExit(timeout: Self.bound) == 0, "\(process.transcript)")
                    #expect(process.standardError.isEmpty, "\(process.transcript)")
                }
            }
        }

        @Test func pingPrintsItsSummaryWhenInterrupted() async throws {
            let type = uniqueServiceType()
            try await withPeer(type, name: "target") { _ in
                let ping = try await startChirp(["ping", type, "--interface", "lo", "-i", "0.2"])
                try await ping.waitForLine(containing: "pong from target: seq=2")
                ping.signal(SIGINT)
                #expect(try await ping.waitForExit(timeout: Self.bound) == 0, "\(ping.transcript)")
                #expect(ping.lines.contains("--- target ping statistics ---"), "\(ping.transcript)")
                #expect(ping.lines.last?.hasPrefix("rtt min/avg/max/stddev = ") == true, "\(ping.transcript)")
            }
        }

        @Test func aSecondSignalEndsTheProcessAtOnce() async throws {
            // The first SIGINT starts a clean stop; a second one ends the process the usual way (killed by SIGINT:
            // status 130 too). Both in a row must end it within the bound, however far the clean stop got.
            let type = uniqueServiceType()
            let send = try await startWaitingSend(type)
            send.signal(SIGINT)
            send.signal(SIGINT)
            #expect(try await send.waitForExit(timeout: Self.bound) == 130, "\(send.transcript)")
        }
    }
}
