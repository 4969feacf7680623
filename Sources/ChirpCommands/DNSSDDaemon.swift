/// What the tools of this package say when no DNS-SD daemon answers (the transceiver's
/// `TransceiverEvent.discoveryUnavailable(_:)`), and the status they exit with: one wording for `chirp`, `listrctl`,
/// `listr`, `chat` and `logdemo`.
///
/// ```swift
/// case .discoveryUnavailable(let detail):
///     StandardStreams.error(DNSSDDaemon.unavailableMessage(detail), hint: DNSSDDaemon.hint)
///     throw ExitCode(DNSSDDaemon.exitStatus)
/// ```
package enum DNSSDDaemon {
    /// 69, `EX_UNAVAILABLE`.
    package static let exitStatus: Int32 = CommandExitCode.noDaemon.rawValue

    /// "no DNS-SD daemon answers (CALL failed): peers can be neither found nor advertised". `detail` is the core's
    /// report, which starts with the call that failed (`avahi_client_new failed: ...`).
    package static func unavailableMessage(_ detail: String) -> String {
        let call = detail.range(of: " failed").map { " (\(detail[..<$0.lowerBound]) failed)" } ?? ""
        return "no DNS-SD daemon answers\(call): peers can be neither found nor advertised"
    }

    /// What to do about it.
    package static let hint = """
        start it with `sudo systemctl start avahi-daemon` (Linux; it needs the system D-Bus), or `make deps` in a \
        Chirp checkout; on macOS, mDNSResponder should always run
        """
}
