/// A service type no other test or run uses: `prefix` and random hex digits, 12 characters in all (DNS-SD allows
/// 15), so that tests running at once, and earlier runs' leftovers, never see each other's peers.
public func uniqueServiceType(_ prefix: String = "t") -> String {
    let hex = "0123456789abcdef"
    return prefix + String((0..<max(1, 12 - prefix.count)).map { _ in hex.randomElement() ?? "0" })
}
