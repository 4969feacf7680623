/// What a trusted device may do, beyond exchanging messages: a small closed set, written in a trust file as
/// `perms=read,write`.
///
/// | permission | lets the device |
/// | --- | --- |
/// | `read` | run the commands that look (`listrctl item list`) |
/// | `write` | run the commands that change something (`listrctl item add`) |
/// | `logs` | stream the app's logs (a log viewer may hold `logs` and nothing else) |
/// | `admin` | change whom the app trusts (pair a device, edit the trust file through the app) |
///
/// A trust file line without `perms=` gets ``defaults``: `read`, `write` and `logs`, everything but `admin`.
/// `perms=none` trusts a device to exchange messages and nothing more.
public enum Permission: String, Sendable, Hashable, CaseIterable, Comparable, Codable {
    /// Commands that look.
    case read
    /// Commands that change something.
    case write
    /// The log channel.
    case logs
    /// Changing whom the app trusts.
    case admin

    /// What a trust entry without `perms=` holds: `read`, `write` and `logs`.
    public static let defaults: Set<Permission> = [.read, .write, .logs]

    /// Every permission.
    public static let all = Set(allCases)

    /// The declaration order: `read`, `write`, `logs`, `admin`.
    public static func < (lhs: Permission, rhs: Permission) -> Bool {
        allCases.firstIndex(of: lhs) ?? 0 < allCases.firstIndex(of: rhs) ?? 0
    }

    /// How a trust file writes an empty set: `perms=none`.
    public static let noneWord = "none"

    /// `permissions` as a trust file writes them, in declaration order: `read,write`; `none` for the empty set.
    public static func list(_ permissions: Set<Permission>) -> String {
        permissions.isEmpty ? noneWord : permissions.sorted().map(\.rawValue).joined(separator: ",")
    }
}
