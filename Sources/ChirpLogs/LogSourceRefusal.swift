import Chirp
import ChirpSupport

/// A log source that refused a viewer's connection, and why: the source requires a shared secret the viewer does not
/// have, the secrets differ, the source uses none while the viewer does, or the source's accept policy said no.
///
/// Reported by ``LogViewer`` as ``LogViewerEvent/refused(_:)`` (once per source and reason) and, when nothing else
/// could be followed, in ``LogViewerError/refused(_:)``. It never carries the secret.
///
/// ```swift
/// if case .refused(let refusal) = event, refusal.kind == .secretRequired {
///     print("\(refusal.source) needs the shared secret: set CHIRP_SECRET")
/// }
/// ```
public struct LogSourceRefusal: Sendable, Hashable, CustomStringConvertible {
    /// Why the source could not be followed.
    public enum Kind: Sendable, Hashable {
        /// The source requires a shared secret and the viewer has none.
        case secretRequired
        /// Both use a shared secret, but not the same one (or the source speaks no TLS).
        case secretMismatch
        /// The viewer has a shared secret and the source uses none.
        case sourceHasNoSecret
        /// The source's accept policy refused the viewer.
        case notAccepted
        /// Anything else the connection's handshake reported.
        case other
    }

    /// The source as the viewer knows it: `app[pid]@host` when its advertisement was seen, else its name or address.
    public var source: String
    /// The source's advertisement, when the viewer saw it.
    public var info: LogSourceInfo?
    /// Why, in a form code can act on.
    public var kind: Kind
    /// The reason as Chirp's core reported it (never the secret).
    public var reason: String

    /// A refusal; `kind` is read from `reason` (Chirp's wording of connection refusals).
    public init(source: String, info: LogSourceInfo?, reason: String) {
        self.source = info?.description ?? source
        self.info = info
        self.reason = reason
        self.kind = Self.kind(of: reason)
    }

    /// What went wrong, for people; names the source, never the secret. The source's name and its reason come
    /// from the network: their control characters are escaped.
    public var description: String {
        let source = UntrustedText.escaped(self.source)
        switch kind {
        case .secretRequired:
            return "this app (\(source)) requires a shared secret, and this viewer has none"
        case .secretMismatch:
            return "the shared secret does not match the one of \(source) (or it uses none)"
        case .sourceHasNoSecret:
            return "\(source) does not use a shared secret, but this viewer has one"
        case .notAccepted:
            return "\(source) did not accept this viewer (its accept policy refused it)"
        case .other:
            return "\(source) refused the connection: \(UntrustedText.escaped(Self.withoutTLSDetail(reason)))"
        }
    }

    /// Reads the kind from the core's reason (the wording Chirp's security tests pin down).
    static func kind(of reason: String) -> Kind {
        if reason.contains("requires a shared secret") { return .secretRequired }
        if reason.contains("does not use a shared secret") { return .sourceHasNoSecret }
        if reason.contains("shared secret does not match") { return .secretMismatch }
        if reason.contains("not accepted by the accept policy") { return .notAccepted }
        return .other
    }

    /// The reason without the TLS library's detail.
    static func withoutTLSDetail(_ reason: String) -> String {
        guard let detail = reason.range(of: " (TLS handshake failed") else { return reason }
        return String(reason[..<detail.lowerBound])
    }
}
