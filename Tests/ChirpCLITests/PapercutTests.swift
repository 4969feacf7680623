import Chirp
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a newcomer trips over in `chirp` (issue 32's papercuts), each checked with the real binary.
extension ChirpCLITests {
    @Suite struct Papercuts {
        // MARK: - --connect to something that is not a Chirp peer

        @Test(arguments: [
            (
                "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                "this is not a Chirp peer (it answered like an HTTP server)"
            ),
            ("SSH-2.0-OpenSSH_9.2\r\n", "this is not a Chirp peer (it answered like an SSH server)"),
            ("220 mail.example.com ESMTP ready\r\n", "this is not a Chirp peer (what it sent is not a Chirp hello)")
        ])
        func connectingToSomethingElseSaysItIsNotAChirpPeer(reply: String, expected: String) async throws {
            let server = try FakeServer(reply: Array(reply.utf8))
            defer { server.stop() }
            let (status, send) = try await runChirp([
                "send", uniqueServiceType(), "x", "{}", "--connect", "127.0.0.1:\(server.port)", "--timeout", "10",
                "--interface", "lo"
            ])
            #expect(status == 2, "\(send.transcript)")
            #expect(send.standardError.contains(expected), "\(send.transcript)")
            #expect(!send.standardError.contains("frame of"), "\(send.transcript)")
        }

        // MARK: - --json of a ChirpCommands reply

        @Test func requestJSONShowsACommandReplyItselfNotItsWireForm() async throws {
            let type = uniqueServiceType()
            // What a ChirpCommands app answers: a binary reply, kind byte `t` then the text, or `d` then the bytes.
            let answer: (Transceiver) throws -> Void = { transceiver in
                try transceiver.respond(to: ListItemsRequest.self) { _, _ in Data("t#1 [ ] milk\n#2 [x] eggs".utf8) }
                try transceiver.respond(to: DumpRequest.self) { _, _ in Data([0x64, 0x00, 0x01, 0xFF]) }
            }
            try await withPeer(type, name: "kitchen", configure: answer) { _ in
                let (status, text) = try await runChirp([
                    "send", type, "listr.item.list", "{}", "--request", "--json", "--interface", "lo"
                ])
                #expect(status == 0, "\(text.transcript)")
                let object = try jsonObject(try #require(text.lines.first, "\(text.transcript)"))
                #expect(object["payload"] as? String == "#1 [ ] milk\n#2 [x] eggs", "\(text.transcript)")
                #expect(object["from"] as? String == "kitchen")

                let (dataStatus, data) = try await runChirp([
                    "send", type, "test.dump", "{}", "--request", "--json", "--interface", "lo"
                ])
                #expect(dataStatus == 0, "\(data.transcript)")
                let dump = try jsonObject(try #require(data.lines.first, "\(data.transcript)"))
                #expect(
                    dump["payload"] as? [String: String] == ["base64": Data([0x00, 0x01, 0xFF]).base64EncodedString()],
                    "\(data.transcript)")
            }
        }

        // MARK: - chirp's own peers

        @Test func everyCommandJoinsUnderANameOfItsOwnMarkedAsATool() async throws {
            let type = uniqueServiceType()
            try await withPeer(type, name: "host") { peer in
                let first = try await startChirp(["listen", type, "--interface", "lo"])
                let second = try await startChirp(["listen", type, "--interface", "lo"])
                let joined = try await withTimeout(.seconds(30), "both listeners to connect") {
                    while true {
                        let tools = peer.connectedPeers.filter { $0.name.hasPrefix("chirp-") }
                        if tools.count == 2 { return tools }
                        try await Task.sleep(for: .milliseconds(20))
                    }
                }
                let names = Set(joined.map(\.name))
                #expect(names.count == 2, "\(names)")
                for process in [first, second] {
                    let name = try #require(
                        joined.first { $0.name.hasSuffix("-\(process.pid)") }.map(\.name), "\(names)")
                    #expect(name == "chirp-listen-\(Configuration.defaultPeerName)-\(process.pid)")
                }
                #expect(joined.allSatisfy { $0.metadata["chirp-role"] == "listener" }, "\(joined.map(\.metadata))")
                await first.stop()
                await second.stop()
            }
        }

        @Test func pingAndRequestPreferAnAppToChirpsOwnPeers() async throws {
            let type = uniqueServiceType()
            // `chirp listen` is there first; the app takes a moment to accept anyone else, so that chirp meets the
            // listener first (as happens when both run: whichever connects first was picked).
            let listen = try await startChirp(["listen", type, "--interface", "lo", "--name", "listener"])
            defer { listen.kill() }
            let app: (Transceiver) throws -> Void = { transceiver in
                try transceiver.respond(to: Question.self) { question, _ in Answer(text: "the app: \(question.text)") }
            }
            var configuration = Configuration(serviceType: type)
            configuration.peerName = "app"
            configuration.interface = .loopback
            configuration.acceptPolicy = { candidate in
                if candidate.peer.name != "listener" { try? await Task.sleep(for: .milliseconds(700)) }
                return true
            }
            let transceiver = Transceiver(configuration: configuration)
            try app(transceiver)
            try await transceiver.start()
            try await withTeardown {
                #expect(await waitForPeer(named: "listener", on: transceiver) != nil, "\(listen.transcript)")
                // The app's own advertisement takes a moment to be published (DNS-SD probes the name first): until it
                // is, a chirp started now finds only the listener, rightly.
                try await waitUntilAdvertised(type, name: "app")
                let (status, send) = try await runChirp([
                    "send", type, "test.question", #"{"text":"who?"}"#, "--request", "--interface", "lo"
                ])
                #expect(status == 0, "\(send.transcript)")
                #expect(send.standardOutput.contains("the app: who?"), "\(send.transcript)")

                let (pinged, ping) = try await runChirp(["ping", type, "-c", "1", "--interface", "lo"])
                #expect(pinged == 0, "\(ping.transcript)")
                #expect(ping.lines.first?.hasPrefix("PING app ") == true, "\(ping.transcript)")
            } teardown: {
                await transceiver.shutdown()
                await listen.stop()
            }
        }

        @Test func pingFallsBackToAChirpPeerWhenNoAppIsThere() async throws {
            let type = uniqueServiceType()
            let listen = try await startChirp(["listen", type, "--interface", "lo", "--name", "listener"])
            defer { listen.kill() }
            let (status, ping) = try await runChirp(["ping", type, "-c", "1", "--interface", "lo", "--timeout", "20"])
            #expect(status == 0, "\(ping.transcript)")
            #expect(ping.lines.first?.hasPrefix("PING listener ") == true, "\(ping.transcript)")
            await listen.stop()
        }

        // MARK: - Service types are case-insensitive

        @Test func anUpperCaseServiceTypeReachesThePeersOfThatType() async throws {
            let type = uniqueServiceType()
            let answer: (Transceiver) throws -> Void = { transceiver in
                try transceiver.respond(to: Question.self) { question, _ in Answer(text: "heard \(question.text)") }
            }
            try await withPeer(type, name: "lower", configure: answer) { _ in
                let upper = type.uppercased()
                let (status, send) = try await runChirp([
                    "send", upper, "test.question", #"{"text":"LOUD"}"#, "--request", "--interface", "lo", "--timeout",
                    "20"
                ])
                #expect(status == 0, "\(send.transcript)")
                #expect(send.standardOutput.contains("heard LOUD"), "\(send.transcript)")

                let (pinged, ping) = try await runChirp(["ping", upper, "-c", "1", "--interface", "lo"])
                #expect(pinged == 0, "\(ping.transcript)")
                #expect(ping.lines.first?.hasSuffix(" on _\(type)._tcp") == true, "\(ping.transcript)")

                let (browsed, browse) = try await runChirp([
                    "browse", upper, "--once", "--json", "--interface", "lo", "--timeout", "3"
                ])
                #expect(browsed == 0, "\(browse.transcript)")
                #expect(
                    try browse.lines.map(jsonObject).contains { $0["type"] as? String == "_\(type)._tcp" },
                    "\(browse.transcript)")
            }
        }

        // MARK: - chirp logs takes the options every command takes

        @Test func logsTakesTimeoutAndLogLevelLikeEveryOtherCommand() async throws {
            let service = uniqueServiceType()
            let (status, logs) = try await runChirp([
                "logs", "--service", service, "--interface", "lo", "--no-follow", "--timeout", "1", "--log-level",
                "warning"
            ])
            #expect(status == 2, "nothing to follow: \(logs.transcript)")
            #expect(logs.standardError.hasPrefix("chirp: error: "), "\(logs.transcript)")

            // Following, --timeout ends the run, as it does for listen and browse.
            let (followed, following) = try await runChirp([
                "logs", "--service", service, "--interface", "lo", "--timeout", "1"
            ])
            #expect(followed == 0, "\(following.transcript)")
        }

        // MARK: - An interface where no peer can be

        @Test(.enabled(if: HostInterfaces.down != nil, "needs a network interface that is down"))
        func aDownInterfaceIsNamedAsTheProblem() async throws {
            let interface = try #require(HostInterfaces.down)
            let type = uniqueServiceType()
            try await withPeer(type, name: "on-lo") { _ in
                let (status, ping) = try await runChirp([
                    "ping", type, "--interface", interface, "--timeout", "2"
                ])
                #expect(status == 2, "\(ping.transcript)")
                #expect(
                    ping.standardError.contains("the network interface \(interface) is down"), "\(ping.transcript)")
                #expect(ping.standardError.contains("--interface lo"), "\(ping.transcript)")
            }
        }

        @Test(.enabled(if: HostInterfaces.upWithAddress != nil, "needs an interface other than lo that is up"))
        func peersAdvertisedOnAnotherInterfaceAreNamed() async throws {
            let interface = try #require(HostInterfaces.upWithAddress)
            let type = uniqueServiceType()
            try await withPeer(type, name: "on-lo") { _ in
                let (status, send) = try await runChirp([
                    "send", type, "x", "{}", "--request", "--interface", interface, "--timeout", "2"
                ])
                #expect(status == 2, "\(send.transcript)")
                #expect(send.standardError.contains("advertised on lo"), "\(send.transcript)")
                #expect(send.standardError.contains("--interface lo"), "\(send.transcript)")
            }
        }

        // MARK: - Numbers in words

        @Test func durationsInLogsAreRounded() async throws {
            let (status, send) = try await runChirp(
                ["send", uniqueServiceType(), "x", "{}", "--log-level", "debug", "--timeout", "10"],
                environment: ExitStatuses.noDaemon)
            #expect(status == 69, "\(send.transcript)")
            let line = try #require(
                send.standardError.split(separator: "\n").first { $0.contains("retry-in=") }, "\(send.transcript)")
            let value = try #require(line.split(separator: " ").first { $0.hasPrefix("retry-in=") })
                .dropFirst("retry-in=".count)
            #expect(value.hasSuffix("s") && value.count <= 5, "\(line)")
        }

        @Test func versionIsPrinted() async throws {
            let (status, version) = try await runChirp(["--version"])
            #expect(status == 0, "\(version.transcript)")
            let line = try #require(version.lines.first)
            #expect(line.split(separator: ".").count >= 3 && line.first?.isNumber == true, "\(line)")
        }
    }
}

/// This host's network interfaces, for the tests of `--interface`.
enum HostInterfaces {
    /// An interface that is down (not loopback), if there is one.
    static let down: String? = interfaces().first { !$0.isUp && !$0.isLoopback }?.name

    /// An interface other than loopback that is up and has an IPv4 address, if there is one.
    static let upWithAddress: String? = interfaces().first { $0.isUp && !$0.isLoopback && $0.hasIPv4 }?.name

    struct Interface {
        var name: String
        var isUp: Bool
        var isLoopback: Bool
        var hasIPv4: Bool
    }

    static func interfaces() -> [Interface] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return [] }
        defer { freeifaddrs(list) }
        var found: [String: Interface] = [:]
        var order: [String] = []
        var cursor: UnsafeMutablePointer<ifaddrs>? = first
        while let entry = cursor {
            defer { cursor = entry.pointee.ifa_next }
            let name = String(cString: entry.pointee.ifa_name)
            let flags = entry.pointee.ifa_flags
            var interface =
                found[name]
                ?? Interface(
                    name: name, isUp: flags & UInt32(IFF_UP) != 0, isLoopback: flags & UInt32(IFF_LOOPBACK) != 0,
                    hasIPv4: false)
            if let address = entry.pointee.ifa_addr, Int32(address.pointee.sa_family) == AF_INET {
                interface.hasIPv4 = true
            }
            if found[name] == nil { order.append(name) }
            found[name] = interface
        }
        return order.compactMap { found[$0] }
    }
}
