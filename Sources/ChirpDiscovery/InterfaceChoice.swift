/// Where to resolve an instance next when an answer only repeats addresses that failed.
///
/// A host with two interfaces is seen on both, and resolved on one. When the link behind that one goes (the peer's
/// cable pulled, its Wi-Fi off), our side of it often stays up: the daemon keeps the peer's records for that interface
/// in its cache until their TTL ends (two minutes for Avahi's address records), and a resolve there answers, at once,
/// the address that no longer works. So a resolve again that is told which addresses failed (the connection that
/// ended went there, the dial that timed out did) does not settle for an answer made of them only: it asks on an
/// interface it has not asked on this round, while there is one.
enum InterfaceChoice {
    /// The interface to resolve on next, or `nil` to report `answered` as it is.
    /// - Parameters:
    ///   - seenOn: the interfaces the browser sees the instance on.
    ///   - tried: those resolved on this round (the one that answered included).
    ///   - answered: the addresses the answer gave (as discovery reports them: `10.0.0.2`, `fe80::1%eth0`).
    ///   - avoiding: the addresses that failed.
    static func next(seenOn: Set<UInt32>, tried: Set<UInt32>, answered: [String], avoiding: Set<String>) -> UInt32? {
        guard !avoiding.isEmpty, !answered.isEmpty, answered.allSatisfy(avoiding.contains) else { return nil }
        return seenOn.subtracting(tried).min()
    }
}
