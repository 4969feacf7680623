import Chirp
import ChirpDiscovery
// What every test target shares (unique service types, log capture, child processes), visible in every file here.
@_exported import ChirpTestSupport
import Foundation
import Testing

/// Starts a transceiver on `serviceType`, loopback only (with a shared secret when `secret` is given), and waits until
/// the daemon has advertised it (so other processes find it at once). With `includesTools`, chirp's own peers (tools,
/// `Peer.Role.tool`) are listed and reported in its events as any peer.
func startPeer(
    _ serviceType: String, name: String, metadata: [String: String] = [:], secret: String? = nil,
    includesTools: Bool = false, configure: (Transceiver) throws -> Void = { _ in }
) async throws -> Transceiver {
    var configuration = Configuration(serviceType: serviceType)
    configuration.peerName = name
    configuration.metadata = metadata
    configuration.interface = .loopback
    configuration.includesTools = includesTools
    if let secret { configuration.security = .sharedSecret(try SharedSecret(secret)) }
    let transceiver = Transceiver(configuration: configuration)
    try configure(transceiver)
    let events = transceiver.makeEvents()
    try await transceiver.start()
    let advertised = await first(of: events, timeout: .seconds(20)) { event in
        if case .advertised = event { return true }
        return false
    }
    if advertised == nil { await transceiver.shutdown() }
    try #require(advertised != nil, "the test peer \(name) was not advertised within 20 s")
    return transceiver
}

/// Starts a peer as ``startPeer(_:name:metadata:secret:includesTools:configure:)`` does, runs `body` with it, and
/// shuts the peer down, waiting for it, whether `body` returned or threw: no peer outlives its test.
func withPeer<T>(
    _ serviceType: String, name: String, metadata: [String: String] = [:], secret: String? = nil,
    includesTools: Bool = false, configure: (Transceiver) throws -> Void = { _ in },
    _ body: (Transceiver) async throws -> T
) async throws -> T {
    let peer = try await startPeer(
        serviceType, name: name, metadata: metadata, secret: secret, includesTools: includesTools,
        configure: configure)
    return try await withTeardown {
        try await body(peer)
    } teardown: {
        await peer.shutdown()
    }
}

/// The first event that `matches`, or `nil` after `timeout`.
func first(
    of events: AsyncStream<TransceiverEvent>, timeout: Duration,
    where matches: @escaping @Sendable (TransceiverEvent) -> Bool
) async -> TransceiverEvent? {
    await valueWithin(timeout) {
        for await event in events where matches(event) { return event }
        return nil
    }
}

/// Waits until DNS-SD resolves an instance of `serviceType` whose peer name is `name` (on loopback), so that a
/// browse started now finds it at once.
func waitUntilAdvertised(_ serviceType: String, name: String, timeout: Duration = .seconds(20)) async throws {
    let browser = try ServiceBrowser(serviceType: serviceType, interface: .loopback)
    let found = await valueWithin(timeout) { () -> Bool? in
        for await event in browser.events() {
            if case .found(let instance) = event, instance.name == name { return true }
        }
        return false
    }
    try #require(found == true, "\(name) was not advertised on _\(serviceType)._tcp within \(timeout)")
}

/// Starts the `chat` example on `serviceType` (loopback only) as `name`, with `environment` added to its own.
func startChat(
    _ serviceType: String, name: String, arguments: [String] = [], environment: [String: String?] = [:]
) async throws -> TestProcess {
    try await TestProcess(
        binaryPath("chat"), ["--name", name, "--service", serviceType, "--loopback"] + arguments,
        environment: environment)
}

/// Parses one JSON line into a dictionary.
func jsonObject(_ line: String) throws -> [String: Any] {
    let object = try JSONSerialization.jsonObject(with: Data(line.utf8))
    return try #require(object as? [String: Any], "not a JSON object: \(line)")
}

/// The top-level suite: the CLI tests run one at a time (each starts processes and talks to the one avahi-daemon).
/// Every test has at most 5 minutes (their own waits are far shorter).
@Suite(.serialized, .timeLimit(.minutes(5))) enum ChirpCLITests {}
