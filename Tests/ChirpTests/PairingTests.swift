import ChirpTestSupport
import ChirpTrust
import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import Chirp

/// Pairing between real transceivers with device identities (real loopback sockets, the real avahi-daemon, trust
/// files on disk): the code both sides show, what each side writes, what a declined or refused pairing leaves, a
/// relay in the middle, and the gate that keeps requests to one at a time and a few a minute.
extension LiveTests {
    @Suite struct PairingTests {
        @Test func twoDevicesThatComparedTheCodeTrustEachOtherAndThenTalk() async throws {
            try await withScratch { scratch in
                let desk = PairingDesk(answers: [.accept([.read])])
                // Tools are taken into the app's peers and events, so that a pairing connection would show there.
                let scene = try await PairingScene.start(in: scratch, desk: desk, includesTools: true)
                let (app, laptop) = (scene.app, scene.laptop)
                let (appTransceiver, laptopTransceiver) = (scene.appTransceiver, scene.laptopTransceiver)
                let delivered = Collected<String>()
                try appTransceiver.receive(Marker.self) { marker, sender in
                    delivered.append("\(sender.name) \(marker.text)")
                }
                let appEvents = EventRecorder(appTransceiver)
                let appPeer = try await laptopTransceiver.waitForIdentifiedPeer(named: "app")

                let shown = Collected<String>()
                let result = try await laptopTransceiver.pair(with: appPeer) { shown.append($0) }

                // The person at the app saw the same code as the laptop showed, and who asked.
                let request = try #require(desk.requests.values.first)
                #expect(desk.requests.values.count == 1)
                #expect(shown.values == [request.code])
                #expect(request.code.count == 6 && request.code.allSatisfy(\.isNumber))
                #expect(request.name == "laptop")  // its identity's name (the certificate's CN)
                #expect(request.peerName == "laptop")
                #expect(request.fingerprint == laptop.identity.fingerprint)
                #expect(result == PairingResult(name: "app", fingerprint: app.identity.fingerprint, code: request.code))
                // Each side wrote the other into its trust file; the app with the permissions its person gave.
                #expect(try app.trustStore().entry(for: laptop.identity.fingerprint)?.permissions == [.read])
                #expect(try laptop.trustStore().entry(for: app.identity.fingerprint) != nil)
                // The pairing connection was never a peer connection of the app's.
                #expect(!appEvents.events.contains { if case .peerConnected = $0 { true } else { false } })
                #expect(delivered.values.isEmpty)

                // Afterwards an ordinary connection: accepted, with the permissions given (and seen as a peer:
                // the check above would have seen one).
                let peer = try await laptopTransceiver.connect(
                    host: "127.0.0.1", port: try #require(appTransceiver.port))
                #expect(peer.fingerprint == app.identity.fingerprint)
                try await laptopTransceiver.send(Marker(text: "hello"), to: peer)
                try await delivered.waitForCount(1)
                #expect(delivered.values == ["laptop hello"])
                try await appEvents.waitFor("the laptop to connect as a peer") { event in
                    if case .peerConnected(let peer) = event { return peer.name == "laptop" }
                    return false
                }
                let laptopOnApp = try #require(appTransceiver.connectedPeers.first { $0.name == "laptop" })
                #expect(appTransceiver.permissions(of: laptopOnApp) == [.read])
                await scene.shutdown()
            }
        }

        @Test func aDeclinedPairingWritesNothingAndSaysSo() async throws {
            try await withScratch { scratch in
                let desk = PairingDesk(answers: [.decline])
                let scene = try await PairingScene.start(in: scratch, desk: desk)
                let (app, laptop, laptopTransceiver) = (scene.app, scene.laptop, scene.laptopTransceiver)
                let appPeer = try await laptopTransceiver.waitForIdentifiedPeer(named: "app")

                let shown = Collected<String>()
                let error = await #expect(throws: ChirpError.self) {
                    try await laptopTransceiver.pair(with: appPeer) { shown.append($0) }
                }
                #expect(error?.code == .pairingFailed)
                #expect(
                    error?.reason?.contains("the pairing was declined on \"app\"") == true,
                    "\(String(describing: error))")
                #expect(desk.requests.values.count == 1)  // asked, and said no
                #expect(shown.values.count == 1)  // the laptop showed its code all the same
                #expect(try app.trustStore().entries.isEmpty)
                #expect(try laptop.trustStore().entries.isEmpty)
                await scene.shutdown()
            }
        }

        @Test func anAppWithoutAPairingPolicyRefusesBeforeAnyCode() async throws {
            try await withScratch { scratch in
                let scene = try await PairingScene.start(in: scratch, desk: nil)
                let (app, laptopTransceiver) = (scene.app, scene.laptopTransceiver)
                let appPeer = try await laptopTransceiver.waitForIdentifiedPeer(named: "app")
                let shown = Collected<String>()
                let error = await #expect(throws: ChirpError.self) {
                    try await laptopTransceiver.pair(with: appPeer) { shown.append($0) }
                }
                #expect(
                    error?.reason?.contains("\"app\" does not take pairing requests now") == true,
                    "\(String(describing: error))")
                #expect(shown.values.isEmpty)
                #expect(try app.trustStore().entries.isEmpty)
                await scene.shutdown()
            }
        }

        /// A man in the middle terminates TLS on both sides (`scripts/testing/pairing_relay.py`) and passes every
        /// byte on: the laptop computes its code over the relay's certificate, the app over the relay's other one,
        /// so the person at the app sees a code that is not the laptop's, and says no.
        @Test func aRelayInTheMiddleMakesTheTwoCodesDiffer() async throws {
            try await withScratch { scratch in
                let desk = PairingDesk(answers: [.decline])
                let scene = try await PairingScene.start(in: scratch, desk: desk)
                let (app, laptopTransceiver) = (scene.app, scene.laptopTransceiver)
                let relayToLaptop = try TestDevice("relay-a", in: scratch)
                let relayToApp = try TestDevice("relay-b", in: scratch)
                let relay = try await PairingRelay.start(
                    to: try #require(scene.appTransceiver.port), showing: relayToLaptop, presenting: relayToApp)

                let shown = Collected<String>()
                // The laptop was told the relay's fingerprint (the relay advertised the app's name with it).
                let error = await #expect(throws: ChirpError.self) {
                    try await laptopTransceiver.pair(
                        host: "127.0.0.1", port: relay.port, advertised: relayToLaptop.identity.fingerprint,
                        showingCode: { shown.append($0) })
                }
                #expect(error?.reason?.contains("declined") == true, "\(String(describing: error))")
                let request = try #require(desk.requests.values.first)
                let laptopCode = try #require(shown.values.first)
                #expect(request.code != laptopCode)  // what the person compares: different
                #expect(request.fingerprint == relayToApp.identity.fingerprint)  // and who asked is the relay
                #expect(try app.trustStore().entries.isEmpty)
                #expect(try await relay.process.waitForExit() == 0)
                await scene.shutdown()
            }
        }

        @Test func aPeerShowingAnotherCertificateThanItAdvertisedIsRefusedBeforeAnyCode() async throws {
            try await withScratch { scratch in
                let desk = PairingDesk(answers: [.accept(Permission.all)])
                let scene = try await PairingScene.start(in: scratch, desk: desk)
                let (app, laptop, laptopTransceiver) = (scene.app, scene.laptop, scene.laptopTransceiver)
                let relayToLaptop = try TestDevice("relay-a", in: scratch)
                let relayToApp = try TestDevice("relay-b", in: scratch)
                let relay = try await PairingRelay.start(
                    to: try #require(scene.appTransceiver.port), showing: relayToLaptop, presenting: relayToApp)

                let shown = Collected<String>()
                // The impostor advertises the app's fingerprint but cannot show its certificate.
                let error = await #expect(throws: ChirpError.self) {
                    try await laptopTransceiver.pair(
                        host: "127.0.0.1", port: relay.port, advertised: app.identity.fingerprint,
                        showingCode: { shown.append($0) })
                }
                #expect(
                    error?.reason?.contains("it is not the device it claims to be") == true,
                    "\(String(describing: error))")
                #expect(shown.values.isEmpty)
                #expect(desk.requests.values.isEmpty)
                #expect(try laptop.trustStore().entries.isEmpty)
                await relay.process.stop()
                await scene.shutdown()
            }
        }

        /// A flood of pairing requests does not become a flood of questions: one at a time ("busy" while a person is
        /// asked), and at most `maximumRequestsPerMinute` reach the person.
        @Test func pairingRequestsReachAPersonOneAtATimeAndAFewAMinute() async throws {
            try await withScratch { scratch in
                let desk = PairingDesk(answers: [])
                let scene = try await PairingScene.start(in: scratch, desk: desk, limit: 2)
                let (app, laptopTransceiver) = (scene.app, scene.laptopTransceiver)
                let port = try #require(scene.appTransceiver.port)
                let fingerprint = app.identity.fingerprint
                @Sendable func pair() async -> ChirpError? {
                    do {
                        _ = try await laptopTransceiver.pair(
                            host: "127.0.0.1", port: port, advertised: fingerprint, showingCode: { _ in })
                        return nil
                    } catch {
                        return error as? ChirpError
                    }
                }

                // The first is asked, and the person takes their time.
                let first = Task { await pair() }
                try await desk.requests.waitForCount(1)
                // Meanwhile a second is refused at once.
                let busy = await pair()
                #expect(
                    busy?.reason?.contains("another pairing is waiting for an answer there") == true,
                    "\(String(describing: busy))")
                desk.answer(.decline)
                #expect(await first.value?.reason?.contains("declined") == true)
                // The next is asked (the second of the minute), the one after is refused.
                desk.answer(.decline)
                #expect(await pair()?.reason?.contains("declined") == true)
                let tooMany = await pair()
                #expect(
                    tooMany?.reason?.contains("too many pairing requests (at most 2 in 60 s)") == true,
                    "\(String(describing: tooMany))")
                #expect(desk.requests.values.count == 2)
                #expect(try app.trustStore().entries.isEmpty)
                await scene.shutdown()
            }
        }
    }
}

/// The person at the app in a pairing test: records each request and gives the next scripted answer (waiting for
/// one when there is none yet).
final class PairingDesk: Sendable {
    let requests = Collected<PairingRequest>()
    private let answers: NIOLockedValueBox<[PairingAnswer]>

    init(answers: [PairingAnswer]) { self.answers = NIOLockedValueBox(answers) }

    /// Gives the answer to the request waiting for one (or the next).
    func answer(_ answer: PairingAnswer) { answers.withLockedValue { $0.append(answer) } }

    func policy(limit: Int) -> PairingPolicy {
        PairingPolicy(maximumRequestsPerMinute: limit, timeout: .seconds(30)) { request in
            self.requests.append(request)
            // Polls for the test's answer, as `Collected.waitForCount` does; none within the pairing's timeout is a no.
            let deadline = ContinuousClock.now + .seconds(30)
            while ContinuousClock.now < deadline {
                if let answer = self.answers.withLockedValue({ $0.isEmpty ? nil : $0.removeFirst() }) { return answer }
                do { try await Task.sleep(for: .milliseconds(10)) } catch { return .decline }
            }
            return .decline
        }
    }
}

/// The two devices of a pairing test, started: an app (taking pairing requests answered by `desk`, when given) and a
/// laptop that only dials, as a command-line tool, each with an empty trust file.
struct PairingScene {
    let app: TestDevice
    let laptop: TestDevice
    let appTransceiver: Transceiver
    let laptopTransceiver: Transceiver

    static func start(
        in scratch: String, desk: PairingDesk?, limit: Int = 6, includesTools: Bool = false
    ) async throws -> PairingScene {
        let type = uniqueServiceType()
        let app = try TestDevice("app", in: scratch)
        let laptop = try TestDevice("laptop", in: scratch)
        try app.trusts([])
        try laptop.trusts([])
        let appTransceiver =
            desk.map { app.pairingTransceiver(type, desk: $0, limit: limit, includesTools: includesTools) }
            ?? app.transceiver(type)
        let laptopTransceiver = laptop.toolTransceiver(type)
        try await appTransceiver.start()
        try await laptopTransceiver.start()
        return PairingScene(
            app: app, laptop: laptop, appTransceiver: appTransceiver, laptopTransceiver: laptopTransceiver)
    }

    func shutdown() async {
        await laptopTransceiver.shutdown()
        await appTransceiver.shutdown()
    }
}

extension TestDevice {
    /// An app that takes pairing requests, answered by `desk`.
    func pairingTransceiver(_ type: String, desk: PairingDesk, limit: Int = 6, includesTools: Bool = false)
        -> Transceiver
    {
        var settings = configuration(type)
        settings.includesTools = includesTools
        settings.pairing = desk.policy(limit: limit)
        return Transceiver(configuration: settings)
    }

    /// A transceiver that only dials, as a command-line tool's.
    func toolTransceiver(_ type: String) -> Transceiver {
        var settings = configuration(type)
        settings.advertises = false
        return Transceiver(configuration: settings)
    }

    /// The trust file as it is on disk now.
    func trustStore() throws -> TrustStore {
        try TrustStore(parsing: String(contentsOfFile: trustFile, encoding: .utf8))
    }
}

extension Transceiver {
    /// Waits until discovery found the peer named `name`, advertised with a device identity.
    func waitForIdentifiedPeer(named name: String, timeout: Double = 20) async throws -> Peer {
        let events = makeEvents()
        @Sendable func match() -> Peer? { availablePeers.first { $0.name == name && $0.fingerprint != nil } }
        if let peer = match() { return peer }
        return try await withTimeout(.seconds(timeout), "\(name) to be found with its fingerprint") {
            for await _ in events {
                if let peer = match() { return peer }
            }
            throw TimeoutError(what: "\(name) to be found", timeout: .seconds(timeout))
        }
    }
}

/// `scripts/testing/pairing_relay.py`, running: one connection relayed to the app's port.
struct PairingRelay {
    let process: TestProcess
    let port: Int

    static func start(to target: Int, showing: TestDevice, presenting: TestDevice) async throws -> PairingRelay {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/testing/pairing_relay.py").path
        let process = try await TestProcess(
            "/usr/bin/env",
            [
                "python3", script, String(target), showing.identity.directory + "/certificate.pem",
                showing.identity.directory + "/key.pem", presenting.identity.directory + "/certificate.pem",
                presenting.identity.directory + "/key.pem"
            ], input: .closed)
        let line = try await process.waitForLine(containing: "port ")
        let port = try #require(Int(line.dropFirst("port ".count)))
        return PairingRelay(process: process, port: port)
    }
}
