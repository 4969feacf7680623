import Chirp
import Foundation

#if os(Linux)
extension Harness {
    /// Connection set-up on loopback, by how connections are protected: from `connect(host:port:)` to the
    /// established connection (TCP, TLS when any, the hellos, the trust decision), a fresh dialing transceiver each
    /// time, the three modes interleaved. `connect.secret` is read against `connect.open`, `connect.identity`
    /// (mutual TLS 1.3 with device identities, the listener checking its trust file) against `connect.secret`, both
    /// from the same run.
    func connect() throws -> [Figure] {
        let scratch = NSTemporaryDirectory() + "chirp-bench-identities-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(
            atPath: scratch, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let listenerIdentity = try DeviceIdentity.loadOrCreate(name: "listener", directory: scratch + "/listener")
        let dialerIdentity = try DeviceIdentity.loadOrCreate(name: "dialer", directory: scratch + "/dialer")
        var store = TrustStore()
        try store.add(TrustEntry(fingerprint: dialerIdentity.fingerprint, label: "dialer"))
        try store.text.write(toFile: listenerIdentity.directory + "/trusted-peers", atomically: true, encoding: .utf8)

        enum Mode: String, CaseIterable { case open, secret, identity }
        let serviceType = freshServiceType()
        func configuration(_ mode: Mode, name: String, identity: DeviceIdentity, trust: PeerTrust) throws
            -> Configuration
        {
            var configuration = try Configuration.bench(serviceType: serviceType, name: name, secure: mode == .secret)
            configuration.advertises = false  // dialed by address only: discovery plays no part
            if mode == .identity { configuration.security = .identity(identity, trust: trust) }
            return configuration
        }
        var listeners: [Mode: (Transceiver, Int)] = [:]
        for mode in Mode.allCases {
            let listener = Transceiver(
                configuration: try configuration(
                    mode, name: "listener-\(mode)", identity: listenerIdentity, trust: .trustedPeers()))
            let port = try runBlocking {
                let events = listener.makeEvents()
                try await listener.start()
                for await event in events { if case .started(let port) = event { return port } }
                throw BenchError("the \(mode) listener did not start")
            }
            listeners[mode] = (listener, port)
        }
        defer {
            for (listener, _) in listeners.values { try? runBlocking { await listener.shutdown() } }
        }

        /// Milliseconds from `connect` to the established connection, with a dialer started beforehand.
        func sample(_ mode: Mode) throws -> Double {
            guard let (_, port) = listeners[mode] else { throw BenchError("no \(mode) listener") }
            let dialer = Transceiver(
                configuration: try configuration(
                    mode, name: "dialer-\(mode)", identity: dialerIdentity, trust: .trustOnFirstUse()))
            return try runBlocking {
                try await dialer.start()
                let begin = nowNanos()
                _ = try await dialer.connect(host: "127.0.0.1", port: port)
                let elapsed = Double(nowNanos() - begin) / 1e6
                await dialer.shutdown()
                return elapsed
            }
        }
        // The floor: the same TLS on bare SwiftNIO connections, no Chirp.
        let floors = [
            try TLSFloor(
                .psk, certificate: listenerIdentity.directory + "/certificate.pem",
                key: listenerIdentity.directory + "/key.pem"),
            try TLSFloor(
                .mutualTLS13, certificate: listenerIdentity.directory + "/certificate.pem",
                key: listenerIdentity.directory + "/key.pem")
        ]
        defer { for floor in floors { floor.close() } }
        for mode in Mode.allCases { _ = try sample(mode) }  // warm-up: code paths, the pins file
        for floor in floors { _ = try floor.sample() }
        var samples: [Mode: [Double]] = [:]
        var floorSamples: [[Double]] = [[], []]
        for _ in 0..<(options.quick ? 10 : 40) {
            for mode in Mode.allCases { samples[mode, default: []].append(try sample(mode)) }
            for (index, floor) in floors.enumerated() { floorSamples[index].append(try floor.sample()) }
        }
        let floorPSK = Spread(floorSamples[0]).median
        let floorMutual = Spread(floorSamples[1]).median
        func reference(_ mode: Mode, _ words: String) -> Figure.Reference? {
            let values = samples[mode] ?? []
            guard !values.isEmpty else { return nil }
            let spread = Spread(values)
            return .init(name: "connect.\(mode) (\(words), same run)", value: spread.median, spread: spread)
        }
        let count = samples[.open]?.count ?? 0
        return [
            Figure(
                name: "connect.open", title: "connection set-up on loopback, open: TCP and the hellos", unit: "ms",
                samples: samples[.open] ?? [], note: "\(count) connections, each from a fresh transceiver"),
            Figure(
                name: "connect.secret",
                title: "connection set-up on loopback with a shared secret: TCP, TLS 1.2 with a PSK, the hellos",
                unit: "ms", samples: samples[.secret] ?? [], reference: reference(.open, "open"),
                note: "\(count) connections"),
            Figure(
                name: "connect.identity",
                title:
                    "connection set-up on loopback with device identities: TCP, mutual TLS 1.3 (P-256), the trust decision, the hellos",
                unit: "ms", samples: samples[.identity] ?? [], reference: reference(.secret, "shared secret"),
                goal: .ratioAtMost(1.5),
                note:
                    "\(count) connections; the floor, bare SwiftNIO + TLS, same run: TLS 1.2 PSK \(formatNumber(floorPSK)) ms, mutual TLS 1.3 P-256 \(formatNumber(floorMutual)) ms, ratio \(formatNumber(floorMutual / floorPSK))",
                details: ["floorPSKMillis": floorPSK, "floorMutualTLS13Millis": floorMutual])
        ]
    }
}
#endif
