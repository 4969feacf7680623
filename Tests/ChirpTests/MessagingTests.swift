import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing

@testable import Chirp
@testable import ChirpWire

struct AddItem: Codable, Sendable, Equatable { var title: String }
struct RemoveItem: Codable, Sendable, Equatable { var id: Int }
struct Echo: Codable, Sendable { var text: String }
struct Slow: Codable, Sendable {}
struct Fails: Codable, Sendable {}
struct Unanswered: Codable, Sendable {}
struct Named: Codable, Sendable, ChirpMessage {
    static let chirpTypeName = "tests.named"
    var value: Int
}

/// Two connected transceivers in this process, for messaging tests.
struct Pair {
    let alice: Transceiver
    let bob: Transceiver
    let type: String

    init() {
        type = uniqueServiceType()
        alice = Transceiver(configuration: testConfiguration("alice", serviceType: type))
        bob = Transceiver(configuration: testConfiguration("bob", serviceType: type))
    }

    /// Two transceivers of one service type, configured by the caller.
    init(alice: Transceiver, bob: Transceiver) {
        type = alice.configuration.serviceType
        self.alice = alice
        self.bob = bob
    }

    /// Starts both; returns bob as alice sees him and alice as bob sees her.
    func connect() async throws -> (bobPeer: Peer, alicePeer: Peer) {
        try await alice.start()
        try await bob.start()
        let bobPeer = try #require(try await alice.waitForConnectedPeers(1).first)
        let alicePeer = try #require(try await bob.waitForConnectedPeers(1).first)
        return (bobPeer, alicePeer)
    }

    func stop() async {
        await alice.shutdown()
        await bob.shutdown()
    }
}

extension LiveTests {
    @Suite struct MessagingTests {
        @Test func severalMessageTypesArriveInOrder() async throws {
            let pair = Pair()
            enum Received: Equatable, Sendable {
                case add(String)
                case remove(Int)
                case named(Int)
            }
            let received = Collected<Received>()
            try pair.bob.receive(AddItem.self) { item, sender in
                #expect(sender.name == "alice")
                received.append(.add(item.title))
            }
            try pair.bob.receive(RemoveItem.self) { item in received.append(.remove(item.id)) }
            try pair.bob.receive(Named.self) { item in received.append(.named(item.value)) }
            _ = try await pair.connect()

            var expected: [Received] = []
            for index in 0..<300 {
                switch index % 3 {
                case 0:
                    try await pair.alice.send(AddItem(title: "item \(index)"), to: .all)
                    expected.append(.add("item \(index)"))
                case 1:
                    try await pair.alice.send(RemoveItem(id: index), to: .all)
                    expected.append(.remove(index))
                default:
                    try await pair.alice.send(Named(value: index), to: .all)
                    expected.append(.named(index))
                }
            }
            try await received.waitForCount(300)
            #expect(received.values == expected)
            await pair.stop()
        }

        @Test func sendToOneReachesOnlyThatPeer() async throws {
            let type = uniqueServiceType()
            let hub = Transceiver(configuration: testConfiguration("hub", serviceType: type))
            let one = Transceiver(configuration: testConfiguration("one", serviceType: type))
            let two = Transceiver(configuration: testConfiguration("two", serviceType: type))
            let atOne = Collected<String>()
            let atTwo = Collected<String>()
            try one.receive(AddItem.self) { item in atOne.append(item.title) }
            try two.receive(AddItem.self) { item in atTwo.append(item.title) }
            for transceiver in [hub, one, two] { try await transceiver.start() }
            let peers = try await hub.waitForConnectedPeers(2)
            let peerOne = try #require(peers.first { $0.name == "one" })
            try await hub.send(AddItem(title: "just for one"), to: peerOne)
            try await hub.send(AddItem(title: "for all"), to: .all)
            try await atOne.waitForCount(2)
            try await atTwo.waitForCount(1)
            #expect(atOne.values == ["just for one", "for all"])
            #expect(atTwo.values == ["for all"])
            for transceiver in [hub, one, two] { await transceiver.shutdown() }
        }

        @Test func severalHandlersRunInRegistrationOrderAndCanBeRemoved() async throws {
            let pair = Pair()
            let calls = Collected<String>()
            try pair.bob.receive(AddItem.self) { _ in calls.append("first") }
            let second = try pair.bob.receive(AddItem.self) { _ in calls.append("second") }
            let (bobPeer, _) = try await pair.connect()
            try await pair.alice.send(AddItem(title: "x"), to: bobPeer)
            try await calls.waitForCount(2)
            #expect(calls.values == ["first", "second"])
            second.cancel()
            try await pair.alice.send(AddItem(title: "y"), to: bobPeer)
            try await calls.waitForCount(3)
            #expect(calls.values == ["first", "second", "first"])
            await pair.stop()
        }

        @Test func asyncSequenceOfMessages() async throws {
            let pair = Pair()
            let stream = try pair.bob.messages(of: AddItem.self)
            let (bobPeer, _) = try await pair.connect()
            for index in 0..<3 { try await pair.alice.send(AddItem(title: "\(index)"), to: bobPeer) }
            let titles = try await withTimeout(.seconds(20), "three messages") {
                var titles: [String] = []
                for await message in stream {
                    #expect(message.sender.name == "alice")
                    titles.append(message.payload.title)
                    if titles.count == 3 { break }
                }
                return titles
            }
            #expect(titles == ["0", "1", "2"])
            await pair.stop()
        }

        @Test func binaryDataTravelsUnchanged() async throws {
            let pair = Pair()
            let received = Collected<Data>()
            try pair.bob.receive(Data.self) { data in received.append(data) }
            let (bobPeer, _) = try await pair.connect()
            let blob = Data((0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
            try await pair.alice.send(blob, to: bobPeer)
            try await received.waitForCount(1)
            #expect(received.values.first == blob)
            await pair.stop()
        }

        @Test func aThreadThatKeepsSendingToAPeerFollowsItsNewConnectionAfterARestart() async throws {
            // A send remembers, per thread, the connection it used (no lock to find it next time). Both sends below run
            // on one thread, so the second finds the connection of alice's first run, closed since, and must look bob up
            // again.
            let pair = Pair()
            let received = Collected<String>()
            try pair.bob.receive(Echo.self) { echo in received.append(echo.text) }
            let (bobPeer, _) = try await pair.connect()
            let firstSent = DispatchSemaphore(value: 0)
            let restarted = DispatchSemaphore(value: 0)
            let outcome = Collected<String>()
            let sender = Thread {
                do {
                    try pair.alice.send(Echo(text: "before"), to: bobPeer)
                    firstSent.signal()
                    restarted.wait()
                    try pair.alice.send(Echo(text: "after"), to: bobPeer)
                    outcome.append("sent")
                } catch {
                    outcome.append("\(error)")
                    firstSent.signal()
                }
            }
            sender.start()
            await withCheckedContinuation { continuation in
                DispatchQueue.global().async {
                    firstSent.wait()
                    continuation.resume()
                }
            }
            try await received.waitForCount(1)
            await pair.alice.shutdown()
            try await pair.alice.start()
            _ = try await pair.alice.waitForConnectedPeers(1)
            restarted.signal()
            try await outcome.waitForCount(1)
            #expect(outcome.values == ["sent"])
            try await received.waitForCount(2)
            #expect(received.values == ["before", "after"])
            await pair.stop()
        }

        @Test func aBurstOfLargeDataPayloadsArrivesIntactAndInOrder() async throws {
            // Large frames are built in the memory of frames written before (OutboundQueue.recycleLarge): each payload
            // differs, so a frame built over one still being written would show as a wrong payload.
            let pair = Pair()
            let received = Collected<Data>()
            try pair.bob.receive(Data.self) { data in received.append(data) }
            let (bobPeer, _) = try await pair.connect()
            func payload(_ number: Int) -> Data {
                Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ number &* 131) })
            }
            let payloads = (0..<24).map(payload)
            for data in payloads { try await pair.alice.send(data, to: bobPeer) }
            try await received.waitForCount(payloads.count)
            let values = received.values
            for (index, data) in payloads.enumerated() {
                #expect(values[index] == data, "payload \(index)")
            }
            await pair.stop()
        }

        @Test func requestResponseGoesToTheRequesterOnly() async throws {
            let type = uniqueServiceType()
            var serverConfiguration = testConfiguration("server", serviceType: type)
            serverConfiguration.heartbeatTimeout = .seconds(120)  // the hand-written bystander sends no heartbeat
            let server = Transceiver(configuration: serverConfiguration)
            let client = Transceiver(configuration: testConfiguration("client", serviceType: type))
            try server.respond(to: Echo.self) { request, sender in Echo(text: "\(request.text) to \(sender.name)") }
            try server.respond(to: Slow.self) { _, _ async throws -> Echo in
                try await Task.sleep(for: .seconds(30))
                return Echo(text: "late")
            }
            try server.respond(to: Fails.self) { (_, _) throws -> Echo in throw CocoaError(.fileNoSuchFile) }
            for transceiver in [server, client] { try await transceiver.start() }
            let serverPeer = try #require(try await client.waitForConnectedPeers(1).first)
            // A bystander connected to the server too, written by hand so that it keeps every byte the server sends it
            // (reply frames reach no handler, so a transceiver could not tell).
            let bystander = try await RawPeer(port: try #require(server.port))
            let bystanderHello = Hello(peerID: UUID().uuidString, name: "bystander", service: type, metadata: [:])
            try await bystander.write([try bystanderHello.frame(allocator: ByteBufferAllocator())])
            _ = try await server.waitForConnectedPeers(2)

            let reply = try await client.request(Echo(text: "hello"), to: serverPeer, as: Echo.self)
            #expect(reply.text == "hello to client")
            let patient = try await client.request(
                Echo(text: "hello"), to: serverPeer, as: Echo.self, timeout: .seconds(1_000_000_000_000))
            #expect(patient.text == "hello to client")

            await #expect(
                throws: ChirpError.requestTimedOut(type: String(reflecting: Slow.self), peer: serverPeer, seconds: 0.3)
            ) {
                _ = try await client.request(Slow(), to: serverPeer, as: Echo.self, timeout: .milliseconds(300))
            }
            do {
                _ = try await client.request(Fails(), to: serverPeer, as: Echo.self)
                Issue.record("expected a remote failure")
            } catch let error as ChirpError where error.code == .remoteFailure {
                #expect(error.peer?.name == "server")
                #expect(error.messageType == String(reflecting: Fails.self))
                #expect(error.reason?.isEmpty == false)
            }
            await #expect(throws: ChirpError.noResponder(type: String(reflecting: Unanswered.self), peer: serverPeer)) {
                _ = try await client.request(Unanswered(), to: serverPeer, as: Echo.self)
            }
            // Many concurrent requests each get their own reply.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<50 {
                    group.addTask {
                        let reply = try await client.request(Echo(text: "#\(index)"), to: serverPeer, as: Echo.self)
                        #expect(reply.text == "#\(index) to client")
                    }
                }
                try await group.waitForAll()
            }
            // The control: what the server sends everyone reaches the bystander, after anything sent to it before.
            try await server.send(Echo(text: "for everyone"), to: .all)
            try await bystander.waitFor(text: "for everyone")
            #expect(!bystander.hasReceived(text: "to client"), "a reply to the client reached the bystander")
            await bystander.close()
            for transceiver in [server, client] { await transceiver.shutdown() }
        }

        @Test func aRequestFailsAtOnceWhenThePeerGoesAway() async throws {
            let pair = Pair()
            let answering = Collected<Bool>()
            try pair.bob.respond(to: Slow.self) { _, _ async throws -> Echo in
                answering.append(true)
                try await Task.sleep(for: .seconds(60))
                return Echo(text: "never")
            }
            let (bobPeer, _) = try await pair.connect()
            let clock = ContinuousClock()
            let start = clock.now
            let alice = pair.alice
            let reply = Task { try await alice.request(Slow(), to: bobPeer, as: Echo.self, timeout: .seconds(60)) }
            try await answering.waitForCount(1)  // the request is in flight: bob is answering it
            await pair.bob.shutdown()
            // Whether bob's goodbye is read before its connection closes varies (the reason then begins "the peer is
            // stopping; "): either way the request fails at once, saying that bob may have run it.
            let error = await #expect(throws: ChirpError.self) { _ = try await reply.value }
            #expect(error?.code == .peerDisconnected, "\(String(describing: error))")
            #expect(
                error?.reason?.contains("the request had been sent, so the peer may have run it") == true,
                "\(String(describing: error))")
            #expect(clock.now - start < .seconds(30))
            await pair.alice.shutdown()
        }

        @Test func undecodableMessagesAndThrowingHandlersAreReportedNotFatal() async throws {
            let pair = Pair()
            let good = Collected<String>()
            try pair.bob.receive(AddItem.self) { item in
                if item.title == "boom" { throw CocoaError(.featureUnsupported) }
                good.append(item.title)
            }
            let recorder = EventRecorder(pair.bob)
            let (bobPeer, _) = try await pair.connect()
            let typeName = String(reflecting: AddItem.self)
            try await pair.alice.send(RawMessage(typeName: typeName, payload: Data("{\"nope\":1}".utf8)), to: bobPeer)
            try await pair.alice.send(AddItem(title: "boom"), to: bobPeer)
            try await pair.alice.send(AddItem(title: "still served"), to: bobPeer)
            try await good.waitForCount(1)
            #expect(good.values == ["still served"])
            let errors = recorder.events.compactMap { event -> ChirpError? in
                if case .error(let error) = event { return error } else { return nil }
            }
            #expect(errors.contains { $0.code == .decodingFailed && $0.cause is DecodingError })
            #expect(errors.contains { $0.code == .handlerFailed && $0.cause != nil })
            #expect(pair.bob.connectedPeers.count == 1)
            await pair.stop()
        }

        @Test func rawMessagesReachTypedHandlers() async throws {
            let pair = Pair()
            let received = Collected<Int>()
            try pair.bob.receive(Named.self) { named in received.append(named.value) }
            let (bobPeer, _) = try await pair.connect()
            try await pair.alice.send(
                RawMessage(typeName: "tests.named", payload: Data(#"{"value":7}"#.utf8)), to: bobPeer)
            try await received.waitForCount(1)
            #expect(received.values == [7])
            await pair.stop()
        }

        @Test func pingMeasuresARoundTrip() async throws {
            let pair = Pair()
            let (bobPeer, _) = try await pair.connect()
            // A timeout too long for NIO's nanoseconds ("never time out") waits as long as it can, and the pong ends it;
            // the connection's one timer is armed for the distant future, then brought forward by the next ping.
            #expect(try await pair.alice.ping(bobPeer, timeout: .seconds(Int64.max)) > .zero)
            let rtt = try await pair.alice.ping(bobPeer)
            #expect(rtt > .zero)
            await pair.stop()
        }

        @Test func aTaskOnTheConnectionsEventLoopRequestsPingsAndSendsThere() async throws {
            let pair = Pair()
            try pair.bob.respond(to: Echo.self) { request, _ in Echo(text: request.text.uppercased()) }
            let received = Collected<AddItem>()
            try pair.bob.receive(AddItem.self) { item, _ in received.append(item) }
            let (bobPeer, _) = try await pair.connect()
            let executor = try pair.alice.taskExecutor(for: bobPeer)
            let loop = try #require((executor as? EventLoopTaskExecutor)?.eventLoop)
            let alice = pair.alice
            // The control: a task without the preference does not run on the connection's loop.
            #expect(!loop.inEventLoop)
            let onLoop = try await withTaskExecutorPreference(executor) { () async throws -> [Bool] in
                var onLoop = [loop.inEventLoop]
                for index in 0..<20 {
                    let reply = try await alice.request(Echo(text: "item \(index)"), to: bobPeer, as: Echo.self)
                    #expect(reply.text == "ITEM \(index)")
                    onLoop.append(loop.inEventLoop)  // resumed on the loop, where the reply was read
                    try await alice.send(AddItem(title: "#\(index)"), to: bobPeer)
                }
                _ = try await alice.ping(bobPeer)
                onLoop.append(loop.inEventLoop)
                return onLoop
            }
            #expect(onLoop.allSatisfy { $0 }, "\(onLoop)")
            try await received.waitForCount(20)
            #expect(received.values.map(\.title) == (0..<20).map { "#\($0)" })
            await pair.stop()
        }
    }
}
