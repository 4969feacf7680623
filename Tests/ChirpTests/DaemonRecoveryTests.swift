import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

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
            // Whatever happens (a FAIL, no verdict in time, a wait that throws), the script is ended through its
            // cleanup and waited for before the test ends: nothing it started may outlive the test.
            let outcome: Result<String, any Error>
            var namespace: HeldNamespace?
            do {
                let line = try await run.waitForLine(timeout: .seconds(60), "its network namespace") {
                    $0.hasPrefix("namespace net:[")
                }
                let held = try HeldNamespace(String(line.dropFirst("namespace ".count)), of: run.pid)
                namespace = held
                // The positive control of the leftover check below: it sees what runs in that namespace.
                #expect(Self.processes(inNetworkNamespace: held.name).contains(run.pid), "\(run.transcript)")
                // The script's own waits add up to less than this (about 15 s when it passes).
                outcome = .success(
                    try await run.waitForLine(timeout: .seconds(300), "PASS or FAIL") {
                        $0 == "PASS" || $0.hasPrefix("FAIL")
                    })
            } catch {
                outcome = .failure(error)
            }
            await Self.end(run, namespace: namespace, afterVerdict: (try? outcome.get()) != nil)
            let verdict = try outcome.get()
            #expect(verdict == "PASS", "\(run.lines.joined(separator: "\n"))\n\(run.standardError)")
        }

        /// Ends the script the way that lets it clean up: SIGTERM, which its trap turns into an exit through its
        /// cleanup (it stops its peers, dbus-daemon and avahi-daemon); then waits for it. A script still running a
        /// minute later fails the test, and so does any process left in its private network namespace once it has
        /// ended; those are killed here, so that they do not outlive the test either way.
        ///
        /// After its verdict the script exits by itself (after a FAIL, once it has printed the first peer's output):
        /// it is given 30 s for that before the SIGTERM, which then does nothing.
        static func end(_ run: TestProcess, namespace: HeldNamespace?, afterVerdict: Bool) async {
            defer { namespace?.release() }
            if afterVerdict {
                do {
                    try await run.waitForExit(timeout: .seconds(30))
                } catch {
                    // Still running: the SIGTERM below ends it, and the wait after it is checked.
                }
            }
            run.signal(SIGTERM)
            do {
                try await run.waitForExit(timeout: .seconds(60))
            } catch {
                Issue.record("the script did not end within 60 s of SIGTERM: \(error)")
                run.kill()
            }
            // Never the test's own namespace: only a private one holds nothing but what the script started.
            guard let name = namespace?.name, name != networkNamespace(of: "self") else { return }
            let clean = await eventually(timeout: .seconds(20)) { processes(inNetworkNamespace: name).isEmpty }
            if !clean {
                let left = processes(inNetworkNamespace: name)
                let commands = left.map { pid in
                    let command = (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8)) ?? "?"
                    return "\(pid) \(command.trimmingCharacters(in: .whitespacesAndNewlines))"
                }
                Issue.record("left running in the script's network namespace after it ended: \(commands)")
                for pid in left { kill(pid, SIGKILL) }
            }
        }

        /// The script's network namespace (`net:[INODE]`), held open so that it outlives the script: once the last
        /// process in a namespace ends, the kernel may give its number to the next namespace made (another test's),
        /// whose processes are not the script's to kill.
        struct HeldNamespace {
            let name: String
            private let descriptor: Int32

            /// Opens the network namespace of process `pid`; throws unless it is `name`.
            init(_ name: String, of pid: Int32) throws {
                let descriptor = open("/proc/\(pid)/ns/net", O_RDONLY | O_CLOEXEC)
                var status = stat()
                guard descriptor >= 0, fstat(descriptor, &status) == 0, name == "net:[\(status.st_ino)]" else {
                    if descriptor >= 0 { close(descriptor) }
                    throw NotHeld(description: "could not hold network namespace \(name) of process \(pid)")
                }
                self.name = name
                self.descriptor = descriptor
            }

            func release() {
                close(descriptor)
            }

            struct NotHeld: Error, CustomStringConvertible {
                var description: String
            }
        }

        /// The network namespace of process `pid` ("self" for this one), as `net:[INODE]`; `nil` once it has ended.
        static func networkNamespace(of pid: String) -> String? {
            try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/ns/net")
        }

        /// The processes in network namespace `namespace` (`net:[INODE]`).
        static func processes(inNetworkNamespace namespace: String) -> [Int32] {
            let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
            return entries.compactMap(Int32.init).filter { networkNamespace(of: String($0)) == namespace }
        }
    }
}
