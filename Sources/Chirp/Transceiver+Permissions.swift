import ChirpSupport
import ChirpTrust

extension Transceiver {
    /// What `peer` may do here, for an app that checks before it acts (ChirpCommands' `CommandReceiver` does, per
    /// command).
    ///
    /// With a device identity (``Configuration/Security/identity(_:trust:)``): the permissions of the trust file's
    /// line for the fingerprint the peer proved (read as the file is now: a change applies at once), or those of
    /// trust on first use; none for a peer that proved no fingerprint or is no longer trusted. Open or with a shared
    /// secret: every permission (any peer that connects may do anything; see Docs/Security.md).
    public func permissions(of peer: Peer) -> Set<Permission> {
        guard case .identity = configuration.security else { return Permission.all }
        guard let fingerprint = peer.fingerprint, let keeper = currentEngine?.security.keeper else { return [] }
        return keeper.permissions(of: fingerprint) ?? []
    }
}
