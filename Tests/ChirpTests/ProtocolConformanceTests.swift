import Chirp
import Foundation
import NIOConcurrencyHelpers
import Testing

/// Every MUST of Docs/Protocol.md, checked by playing the other peer byte by byte against a real transceiver. Each
/// test is named after its section.
extension LiveTests {
    @Suite struct ProtocolConformanceTests {
        /// A transceiver listening on loopback, with handlers the tests send to.
        struct Server {
            let transceiver: Transceiver
            let type: String
            let port: Int
            let named = Collected<Int>()
            let data = Collected<Data>()

            init(
                handshakeTimeout: Duration? = nil, acceptPolicy: (@Sendable (ConnectionCandidate) async -> Bool)? = nil
            ) async throws {
                type = uniqueServiceType()
                var configuration = testConfiguration("server", serviceType: type)
                if let handshakeTimeout { configuration.handshakeTimeout = handshakeTimeout }
                if let acceptPolicy { configuration.acceptPolicy = acceptPolicy }
                transceiver = Transceiver(configuration: configuration)
                let named = self.named
                let data = self.data
                try transceiver.receive(Named.self) { message in named.append(message.value) }
                try transceiver.receive(Data.self) { bytes in data.append(bytes) }
                try transceiver.respond(to: Echo.self) { echo, _ in Echo(text: echo.text) }
                try await transceiver.start()
                port = try #require(transceiver.port)
            }

            /// Runs `body` with a new server and a raw peer that has completed its handshake with it; then closes the
            /// peer and stops the server, whether `body` passed or not.
            static func withConnectedPeer(_ body: (Server, RawPeer) async throws -> Void) async throws {
                let server = try await Server()
                let peer = try await server.connectedPeer()
                try await withTeardown {
                    try await body(server, peer)
                } teardown: {
                    await peer.close()
                    await server.stop()
                }
            }

            /// A raw peer that has completed its handshake with the server; `features` go in its hello.
            func connectedPeer(name: String = "raw", features: [String] = []) async throws -> RawPeer {
                let peer = try await RawPeer(port: port)
                try await peer.send(RawPeer.hello(service: type, name: name, features: features))
                let hello = try await peer.waitForFrames(1)[0]
                #expect(hello.kind == 1)
                try await withTimeout(.seconds(20), "the server to report the raw peer connected") {
                    while !transceiver.connectedPeers.contains(where: { $0.name == name }) {
                        try await Task.sleep(for: .milliseconds(5))
                    }
                }
                return peer
            }

            func stop() async { await transceiver.shutdown() }
        }

        // MARK: - Section 3: frames

        @Test func section3_aZeroLengthFrameClosesTheConnection() async throws {
            let server = try await Server()
            let peer = try await server.connectedPeer()
            try await peer.send([0, 0, 0, 0])
            try await peer.waitForClose()
            await server.stop()
        }

        @Test func section3_aLengthOverTheLimitClosesTheConnectionBeforeTheBodyArrives() async throws {
            let server = try await Server()
            let peer = try await server.connectedPeer()
            try await peer.send([0x40, 0, 0, 0, 3])  // 1 GiB announced, one byte of it sent
            try await peer.waitForClose()
            await server.stop()
        }

        @Test func section3_aFrameOfUnknownKindIsSkipped() async throws {
            try await Server.withConnectedPeer { server, peer in
                try await peer.send(
                    RawPeer.frame(kind: 0x7E, [1, 2, 3]) + RawPeer.message(type: "tests.named", json: #"{"value":7}"#))
                try await server.named.waitForCount(1)  // the message after it arrived: the unknown frame was skipped
                #expect(server.named.values == [7])
                #expect(!peer.isClosed)
            }
        }

        @Test func section3_aPeerWhoseHelloDoesNotAnnouncePartsGetsALargeMessageAsOneFrame() async throws {
            try await Server.withConnectedPeer { server, old in
                let new = try await server.connectedPeer(name: "new", features: ["parts"])
                let large = Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0) })
                try await server.transceiver.send(large, to: .all)
                let frame = try await old.waitForFrame(kind: 3)
                #expect(frame.message?.payload == Array(large))
                #expect(!old.frames.contains { $0.kind == 9 })
                // Control: the peer that announced parts gets the same message in parts, which make it up exactly.
                let whole = try await withTimeout(.seconds(20), "the parts of the message") { () -> [UInt8] in
                    while true {
                        let parts = new.frames.filter { $0.kind == 9 }
                        if let last = parts.last, last.body[4] & 0x02 != 0 {
                            return parts.flatMap { $0.body.dropFirst(5) }
                        }
                        try await Task.sleep(for: .milliseconds(5))
                    }
                }
                let parts = new.frames.filter { $0.kind == 9 }
                #expect(parts.count == 9)  // 1 MiB and 20 bytes of frame, 128 KiB a part
                #expect(parts.allSatisfy { $0.body.count <= 5 + 128 * 1024 })
                #expect(parts.first?.body[4] == 0x01)
                #expect(!new.frames.contains { $0.kind == 3 && $0.message?.type == "chirp.data" })
                let reassembled = RawPeer.ReceivedFrame(kind: whole[4], body: Array(whole.dropFirst(5)))
                #expect(reassembled.message?.payload == Array(large))
            }
        }

        @Test func section3_partsAreReassembledAndWhatArrivesBetweenThemIsDeliveredFirst() async throws {
            try await Server.withConnectedPeer { server, peer in
                let payload = (0..<(300 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
                let frame = RawPeer.frame(kind: 3, RawPeer.messageBody(type: "chirp.data", payload: payload, flags: 1))
                let cut = 200 * 1024
                try await peer.send(
                    RawPeer.part(stream: 5, flags: 0x01, Array(frame[..<cut]))
                        + RawPeer.message(type: "tests.named", json: #"{"value":1}"#))
                try await server.named.waitForCount(1)  // the small message did not wait for the large one
                #expect(server.data.values.isEmpty)
                try await peer.send(RawPeer.part(stream: 5, flags: 0x02, Array(frame[cut...])))
                try await server.data.waitForCount(1)
                #expect(server.data.values == [Data(payload)])
                #expect(!peer.isClosed)
            }
        }

        @Test func section3_aPartOutOfStepClosesTheConnectionAndOnlyIt() async throws {
            try await Server.withConnectedPeer { server, peer in
                let other = try await server.connectedPeer(name: "other")
                // A middle part of a stream that was never opened.
                try await peer.send(RawPeer.part(stream: 3, flags: 0x00, [1, 2, 3]))
                try await peer.waitForClose(timeout: 2)  // before the heartbeat could (2.5 s and more)
                // The other peer is still served.
                try await other.send(RawPeer.request(id: 11, type: MessageTypeNameOf.echo, json: #"{"text":"still"}"#))
                let response = try #require(try await other.waitForFrame(kind: 5).response)
                #expect(response.id == 11 && response.status == 0)
            }
        }

        @Test func section3_aFirstPartThatAnnouncesAFrameOverTheLimitClosesTheConnection() async throws {
            try await Server.withConnectedPeer { server, peer in
                // 64 MiB + 1 announced in 5 bytes: the server closes without waiting for (or buffering) the rest.
                let length = withUnsafeBytes(of: UInt32((64 << 20) + 1).bigEndian, Array.init)
                try await peer.send(RawPeer.part(stream: 0, flags: 0x01, length + [3]))
                try await peer.waitForClose(timeout: 2)  // before the heartbeat could (2.5 s and more)
            }
        }

        @Test func section3_aFifthOpenStreamClosesTheConnection() async throws {
            try await Server.withConnectedPeer { server, peer in
                let head = Array(RawPeer.message(type: "tests.named", json: #"{"value":1}"#).prefix(8))
                for stream in UInt32(0)..<4 { try await peer.send(RawPeer.part(stream: stream, flags: 0x01, head)) }
                try await peer.send(RawPeer.frame(kind: 6, [1]))  // a ping: the four streams were taken
                _ = try await peer.waitForFrame(kind: 7)
                #expect(!peer.isClosed)
                try await peer.send(RawPeer.part(stream: 4, flags: 0x01, head))
                try await peer.waitForClose(timeout: 2)  // before the heartbeat could (2.5 s and more)
            }
        }

        @Test func section3_aTLSRecordInsteadOfAHelloIsClosedAfterOnlyTheHello() async throws {
            let server = try await Server()
            let peer = try await RawPeer(port: server.port)
            // A TLS ClientHello's start.
            try await peer.send([0x16, 0x03, 0x01, 0x00, 0x05, 0x01, 0x00, 0x00, 0x01, 0x00])
            try await peer.waitForClose()
            #expect(peer.frames.map(\.kind) == [1])  // its own hello, sent before it read anything; nothing else
            await server.stop()
        }

        // MARK: - Section 4: handshake

        @Test func section4_theFirstFrameIsTheHello() async throws {
            let server = try await Server()
            let peer = try await RawPeer(port: server.port)
            let first = try await peer.waitForFrames(1)[0]  // sent without waiting for ours
            #expect(first.kind == 1)
            let hello = try #require(try JSONSerialization.jsonObject(with: Data(first.body)) as? [String: Any])
            #expect(hello["protocol"] as? Int == 1)
            #expect(hello["service"] as? String == server.type)
            #expect(hello["name"] as? String == "server")
            #expect((hello["peerID"] as? String)?.isEmpty == false)
            await peer.close()
            await server.stop()
        }

        /// A first frame the acceptor cannot take, and what its refuse frame says.
        enum BadFirstFrame: CaseIterable, CustomTestStringConvertible {
            case notAHello, helloForAnotherService, helloWithAnotherProtocolVersion, helloWithTheReceiversOwnPeerID
            case malformedHello

            func frame(to server: Server) -> [UInt8] {
                switch self {
                case .notAHello: RawPeer.message(type: "tests.named", json: #"{"value":1}"#)
                case .helloForAnotherService: RawPeer.hello(service: "other")
                case .helloWithAnotherProtocolVersion: RawPeer.hello(service: server.type, protocol: 2)
                case .helloWithTheReceiversOwnPeerID:
                    RawPeer.hello(service: server.type, id: server.transceiver.configuration.peerID)
                case .malformedHello: RawPeer.frame(kind: 1, Array("not json".utf8))
                }
            }

            /// Whether `reason`, the refuse frame's text, is the one expected.
            func expects(_ reason: String) -> Bool {
                switch self {
                case .notAHello: reason == "expected a hello frame first, got kind 0x3"
                case .helloForAnotherService: reason.contains("service type mismatch")
                case .helloWithAnotherProtocolVersion: reason.contains("protocol version mismatch")
                case .helloWithTheReceiversOwnPeerID: true
                case .malformedHello: reason.hasPrefix("malformed hello")
                }
            }

            var testDescription: String { "\(self)" }
        }

        @Test(arguments: BadFirstFrame.allCases)
        func section4_aFirstFrameThatIsNotAnAcceptableHelloGetsARefuseFrameThenClose(_ bad: BadFirstFrame)
            async throws
        {
            let server = try await Server()
            let peer = try await RawPeer(port: server.port)
            try await peer.send(bad.frame(to: server))
            try await peer.waitForClose()
            #expect(peer.frames.map(\.kind) == [1, 2])  // its hello, then the refusal
            let reason = peer.frames.last?.text ?? ""
            #expect(bad.expects(reason), "refused with: \(reason)")
            #expect(server.named.values.isEmpty)
            await server.stop()
        }

        @Test func section4_anAcceptorWhosePolicySaysNoSendsOnlyARefuseFrameThenCloses() async throws {
            let server = try await Server(acceptPolicy: { candidate in candidate.peer.name != "raw" })
            let peer = try await RawPeer(port: server.port)
            try await peer.send(RawPeer.hello(service: server.type))
            try await peer.waitForClose()
            #expect(peer.frames.map(\.kind) == [2])  // no hello: the policy decides before the acceptor says who it is
            #expect(peer.frames.first?.text.contains("not accepted") == true)
            // Control: a name the policy accepts gets the acceptor's hello and stays connected.
            let accepted = try await RawPeer(port: server.port)
            try await accepted.send(RawPeer.hello(service: server.type, name: "welcome"))
            #expect(try await accepted.waitForFrames(1)[0].kind == 1)
            await accepted.close()
            await server.stop()
        }

        @Test func section4_aHelloThatTricklesInIsClosedAtTheHandshakeTimeoutNotBefore() async throws {
            // The defaults: a 5 s handshake timeout, a 2.5 s heartbeat timeout. The heartbeat must not cut a handshake.
            let server = try await Server()
            let peer = try await RawPeer(port: server.port)
            let opened = ContinuousClock.now
            let hello = RawPeer.hello(service: server.type)
            for byte in hello.prefix(20) {  // a byte every 0.5 s: never complete within 5 s
                if peer.isClosed { break }
                try await peer.send([byte])
                try await Task.sleep(for: .milliseconds(500))
            }
            try await peer.waitForClose()
            let lifetime = ContinuousClock.now - opened
            #expect(lifetime >= .milliseconds(4500), "closed after \(lifetime), before the 5 s handshake timeout")
            #expect(peer.frames.map(\.kind) == [1])  // its hello, and no refuse frame: a timeout just closes
            await server.stop()
        }

        // MARK: - Section 5: messages, requests and responses

        @Test func section5_aMessageGoesOnlyToHandlersOfExactlyItsTypeName() async throws {
            try await Server.withConnectedPeer { server, peer in
                try await peer.send(
                    RawPeer.message(type: "Tests.Named", json: #"{"value":1}"#)  // another name (case differs)
                        + RawPeer.message(type: "tests.named", json: #"{"value":2}"#))  // the positive control
                try await server.named.waitForCount(1)
                #expect(server.named.values == [2])  // messages are handled in order: the first would have come first
            }
        }

        @Test func section5_aRequestGetsExactlyOneResponseWithItsID() async throws {
            try await Server.withConnectedPeer { server, peer in
                try await peer.send(
                    RawPeer.request(id: 0x0102_0304_0506_0708, type: MessageTypeNameOf.echo, json: #"{"text":"hi"}"#))
                let frame = try await peer.waitForFrame(kind: 5)
                let response = try #require(frame.response)
                #expect(response.id == 0x0102_0304_0506_0708)
                #expect(response.status == 0)
                #expect(response.flags == 0)
                #expect(String(decoding: response.payload, as: UTF8.self) == #"{"text":"hi"}"#)
            }
        }

        @Test func section5_aRequestNobodyAnswersGetsStatus2WithPlainTextUnderItsOwnTypeName() async throws {
            try await Server.withConnectedPeer { server, peer in
                try await peer.send(RawPeer.request(id: 7, type: "listr.item.lsit", json: "{}"))
                let response = try #require(try await peer.waitForFrame(kind: 5).response)
                #expect(response.id == 7)
                #expect(response.status == 2)
                #expect(response.flags == 0)
                #expect(response.type == "listr.item.lsit")
                #expect(String(decoding: response.payload, as: UTF8.self) == "no responder for listr.item.lsit")
            }
        }

        @Test func section5_aResponseToAnUnknownIDIsIgnored() async throws {
            try await Server.withConnectedPeer { server, peer in
                let stray = RawPeer.frame(
                    kind: 5,
                    withUnsafeBytes(of: UInt64(999).bigEndian, Array.init) + [0]
                        + RawPeer.messageBody(type: "x", payload: []))
                try await peer.send(stray + RawPeer.message(type: "tests.named", json: #"{"value":3}"#))
                try await server.named.waitForCount(1)  // the frame after it was handled: the connection is fine
                #expect(!peer.isClosed)
            }
        }

        @Test func section5_dataTravelsAsChirpDataAndItsOldNamesAreAccepted() async throws {
            try await Server.withConnectedPeer { server, peer in
                // The old names of Data, as Chirp on Linux and on macOS sent them, with the binary flag.
                try await peer.send(
                    RawPeer.frame(
                        kind: 3, RawPeer.messageBody(type: "FoundationEssentials.Data", payload: [1, 2], flags: 1))
                        + RawPeer.frame(kind: 3, RawPeer.messageBody(type: "Foundation.Data", payload: [3], flags: 1))
                        + RawPeer.frame(kind: 3, RawPeer.messageBody(type: "chirp.data", payload: [4], flags: 1)))
                try await server.data.waitForCount(3)
                #expect(server.data.values == [Data([1, 2]), Data([3]), Data([4])])
                // What Chirp sends now.
                try await server.transceiver.send(Data([9, 9]), to: .all)
                let message = try #require(try await peer.waitForFrame(kind: 3).message)
                #expect(message.type == "chirp.data")
                #expect(message.flags == 1)
                #expect(message.payload == [9, 9])
            }
        }

        // MARK: - Section 7: heartbeats

        @Test func section7_aPingIsAnsweredWithAPongCarryingTheSameBytes() async throws {
            try await Server.withConnectedPeer { server, peer in
                try await peer.send(RawPeer.frame(kind: 6, [0xDE, 0xAD, 0xBE, 0xEF]))
                let pong = try await withTimeout(.seconds(20), "the pong") {
                    while true {
                        if let pong = peer.frames.first(where: { $0.kind == 7 && !$0.body.isEmpty }) { return pong }
                        try await Task.sleep(for: .milliseconds(5))
                    }
                }
                #expect(pong.body == [0xDE, 0xAD, 0xBE, 0xEF])
            }
        }

        @Test func section7_aQuietSideSendsAnEmptyPing() async throws {
            try await Server.withConnectedPeer { server, peer in
                let ping = try await peer.waitForFrame(kind: 6)  // the server has nothing to say: it pings
                #expect(ping.body.isEmpty)
            }
        }

        @Test func section7_aPeerThatSendsNothingIsClosedAfterTheHeartbeatTimeout() async throws {
            let server = try await Server()
            let peer = try await server.connectedPeer()
            // The raw peer answers nothing, not even pings: after 2.5 s (and the kernel's word that nothing arrived),
            // the server closes and reports it disconnected.
            try await peer.waitForClose()
            try await withTimeout(.seconds(20), "the raw peer reported gone") {
                while server.transceiver.connectedPeers.contains(where: { $0.name == "raw" }) {
                    try await Task.sleep(for: .milliseconds(5))
                }
            }
            await server.stop()
        }
    }
}

/// Type names of the test types, as they travel.
enum MessageTypeNameOf {
    static let echo = "ChirpTests.Echo"
}
