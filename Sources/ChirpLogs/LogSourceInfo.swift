import Chirp
import ChirpSupport

/// A log source as a viewer knows it: from its advertisement and handshake.
public struct LogSourceInfo: Sendable, Hashable, CustomStringConvertible {
    /// The app name it advertises.
    public var appName: String
    /// The host it runs on.
    public var host: String
    /// Its process id.
    public var processID: Int32
    /// Its stream id (kept across restarts when the app uses a spool).
    public var streamID: String
    /// The Chirp peer id of the process.
    public var peerID: String
    /// The fingerprint of the source's device identity, when it uses one: the one TLS proved once the viewer is
    /// connected to it, the advertised one before (`Peer.fingerprint`).
    public var fingerprint: Fingerprint?

    /// Creates a source description.
    public init(
        appName: String, host: String, processID: Int32, streamID: String, peerID: String,
        fingerprint: Fingerprint? = nil
    ) {
        self.appName = appName
        self.host = host
        self.processID = processID
        self.streamID = streamID
        self.peerID = peerID
        self.fingerprint = fingerprint
    }

    /// The source behind a peer, or `nil` if the peer is not a log source (a viewer, another kind of peer).
    public init?(peer: Peer) {
        guard peer.metadata[LogProtocol.Key.role] == LogProtocol.Role.source else { return nil }
        appName = peer.metadata[LogProtocol.Key.app] ?? peer.name
        host = peer.metadata[LogProtocol.Key.host] ?? peer.host ?? "?"
        processID = peer.metadata[LogProtocol.Key.pid].flatMap { Int32($0) } ?? 0
        streamID = peer.metadata[LogProtocol.Key.stream] ?? peer.id
        peerID = peer.id
        fingerprint = peer.fingerprint
    }

    /// `app[pid]@host`, with control characters escaped (the source chose its app and host names).
    public var description: String { UntrustedText.escaped("\(appName)[\(processID)]@\(host)") }
}

/// Which sources a viewer follows: all by default, or those matching the app name, host and process id given.
public struct LogSourceSelector: Sendable, Equatable, CustomStringConvertible {
    /// The app name (exact, case-insensitive), or `nil` for any.
    public var appName: String?
    /// The host (case-insensitive; `.local` and a trailing dot are ignored), or `nil` for any.
    public var host: String?
    /// The process id, or `nil` for any.
    public var processID: Int32?

    /// A selector; every `nil` matches anything.
    public init(appName: String? = nil, host: String? = nil, processID: Int32? = nil) {
        self.appName = appName
        self.host = host
        self.processID = processID
    }

    /// Whether `source` is selected.
    public func matches(_ source: LogSourceInfo) -> Bool {
        if let appName, appName.lowercased() != source.appName.lowercased() { return false }
        if let host, Self.normalized(host) != Self.normalized(source.host) { return false }
        if let processID, processID != source.processID { return false }
        return true
    }

    private static func normalized(_ host: String) -> String {
        var host = host.lowercased()
        if host.hasSuffix(".") { host.removeLast() }
        if host.hasSuffix(".local") { host.removeLast(6) }
        return host
    }

    /// `every source`, or e.g. `app logdemo on host box pid 42`.
    public var description: String {
        var parts: [String] = []
        if let appName { parts.append("app \(appName)") }
        if let host { parts.append("host \(host)") }
        if let processID { parts.append("pid \(processID)") }
        return parts.isEmpty ? "any log source" : parts.joined(separator: ", ")
    }
}
