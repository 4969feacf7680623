import Foundation
import Testing

/// No daemon at start, the daemon starting later, the daemon restarting: a peer says what is wrong and recovers by
/// itself. Runs in a private network and mount namespace (`unshare`) with its own D-Bus and avahi-daemon, so the
/// machine's daemon is not disturbed; skipped where that is not possible (not root, no `unshare`).
extension LiveTests {
    @Suite struct DaemonRecoveryTests {
        static var canUnshare: Bool {
            getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare")
                && FileManager.default.isExecutableFile(atPath: "/usr/sbin/avahi-daemon")
        }

        @Test(.enabled(if: canUnshare, "needs root and unshare(1) for a private network namespace"))
        func recoversWhenTheDaemonStartsLateAndWhenItRestarts() async throws {
            let script = URL(fileURLWithPath: #filePath)
                .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("scripts/testing/daemon-recovery.sh").path
            let binDirectory = (binaryPath("chat") as NSString).deletingLastPathComponent
            let run = try await TestProcess(
                "/usr/bin/unshare", ["--mount", "--net", script, binDirectory], name: "daemon-recovery")
            let verdict = try await run.waitForLine(timeout: .seconds(90), "PASS or FAIL") {
                $0 == "PASS" || $0.hasPrefix("FAIL")
            }
            // Let the script's exit trap stop what it started (its dbus-daemon and avahi-daemon): killed before that, it
            // would leave them running.
            _ = try? await run.waitForExit(timeout: .seconds(30))
            #expect(verdict == "PASS", "\(run.lines.joined(separator: "\n"))\n\(run.standardError)")
        }
    }
}
