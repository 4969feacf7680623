import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The exclusive lock a listr holds on its store while it runs, so that a second listr on the same file refuses to
/// start instead of overwriting the first one's changes (each would save its own items over the other's).
///
/// The store itself is replaced at every save (written to a temporary file, then renamed over it: `AtomicFile`), so
/// the lock is taken on a file of its own beside it, `.NAME.lock` (`.todo.json.lock` for `todo.json`), with `flock`,
/// as the log spool does (Sources/ChirpLogs/LogSpool.swift). The kernel releases it when the process ends, however it
/// ends: a crashed listr leaves no stale lock. The holder writes its process id into the file, so the one refused
/// can name it. The file stays after listr stops (removing it could let two processes lock two different files).
final class StoreLock: Sendable {
    /// The lock file's path.
    let path: String
    private let descriptor: Int32

    /// Takes the lock for the store at `storePath`.
    /// - Throws: ``StoreLockError`` when another process holds it, or the lock file cannot be made.
    init(storePath: String) throws(StoreLockError) {
        let url = URL(fileURLWithPath: storePath)
        path = url.deletingLastPathComponent().appendingPathComponent("." + url.lastPathComponent + ".lock").path
        let fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .cannotCreate(path: path, reason: String(cString: strerror(errno))) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let holder = Self.readHolder(fd)
            close(fd)
            throw .inUse(store: storePath, holder: holder)
        }
        descriptor = fd
        // Who holds it, for the next one that tries; the lock does not depend on it.
        let text = Array("\(getpid())\n".utf8)
        if ftruncate(fd, 0) == 0 { _ = text.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) } }
    }

    deinit { close(descriptor) }

    /// The process id the holder wrote, if it is a number.
    private static func readHolder(_ fd: Int32) -> Int32? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        let text = String(decoding: buffer.prefix(count), as: UTF8.self)
        return Int32(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }
}

/// Why listr cannot take its store.
enum StoreLockError: Error, CustomStringConvertible {
    /// Another process (`holder`, when it said) holds the store.
    case inUse(store: String, holder: Int32?)
    /// The lock file cannot be created (a directory that is not writable, ...).
    case cannotCreate(path: String, reason: String)

    var description: String {
        switch self {
        case .inUse(let store, let holder):
            let who = holder.map { "another listr (process \($0))" } ?? "another listr"
            return "\(store) is in use by \(who); two apps on one store would overwrite each other's changes: "
                + "stop the other one, or give this one another --store"
        case .cannotCreate(let path, let reason):
            return "cannot create the store's lock file \(path): \(reason)"
        }
    }
}
