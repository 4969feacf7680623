import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes files all at once or not at all, for CLIs that save a reply (`store dump PATH`) and apps that save their
/// data: readers see the old file or the new one, never a partial one, even if the process dies mid-write.
///
/// ```swift
/// try AtomicFile.write(bytes, to: "backup.json")
/// ```
public enum AtomicFile {
    /// Writes `data` to a temporary file next to `path`, flushes it to disk, then renames it over `path`.
    /// An existing file keeps its permissions; a new one gets 0644 (less the umask).
    ///
    /// - Throws: ``AtomicFileError`` naming the path and the system's reason; `path` is then unchanged and no
    ///   temporary file is left behind.
    public static func write(_ data: Data, to path: String) throws(AtomicFileError) {
        let url = URL(fileURLWithPath: path)
        let directory = url.deletingLastPathComponent().path
        let temporary =
            directory + "/." + url.lastPathComponent + ".tmp-" + String(UInt32.random(in: 0...UInt32.max), radix: 16)

        var mode: mode_t = 0o644
        var status = stat()
        if stat(path, &status) == 0 {
            if (status.st_mode & S_IFMT) == S_IFDIR { throw AtomicFileError(path: path, reason: "it is a directory") }
            mode = status.st_mode & 0o7777
        }
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard fd >= 0 else { throw AtomicFileError(path: path, errno: errno) }
        var failure: AtomicFileError?
        data.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) in
            guard let base = buffer.baseAddress else { return }
            var offset = 0
            while offset < buffer.count {
                let written = systemWrite(fd, base + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    failure = AtomicFileError(path: path, errno: errno)
                    return
                }
                offset += written
            }
        }
        if failure == nil && fsync(fd) != 0 { failure = AtomicFileError(path: path, errno: errno) }
        if close(fd) != 0 && failure == nil { failure = AtomicFileError(path: path, errno: errno) }
        if failure == nil && rename(temporary, path) != 0 { failure = AtomicFileError(path: path, errno: errno) }
        if let failure {
            unlink(temporary)
            throw failure
        }
        // Make the rename itself durable; a failure here leaves a complete file either way.
        let directoryFD = open(directory.isEmpty ? "." : directory, O_RDONLY | O_CLOEXEC)
        if directoryFD >= 0 {
            fsync(directoryFD)
            close(directoryFD)
        }
    }
}

/// A file could not be written; the message names it and says why.
public struct AtomicFileError: Error, Sendable, Equatable, CustomStringConvertible, LocalizedError {
    /// The file that was to be written.
    public var path: String
    /// Why it could not be.
    public var reason: String

    /// Creates an error value.
    public init(path: String, reason: String) {
        self.path = path
        self.reason = reason
    }

    init(path: String, errno code: Int32) {
        self.init(path: path, reason: String(cString: strerror(code)))
    }

    /// "could not write PATH: REASON".
    /// What went wrong, for people.
    public var description: String { "could not write \(path): \(reason)" }
    /// The same sentence as ``description``, for `localizedDescription`.
    public var errorDescription: String? { description }
}

/// The system's `write(2)` (inside ``AtomicFile`` the name means its own method).
private func systemWrite(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    write(fd, bytes, count)
}
