import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The file operations behind ``DeviceIdentity``: a directory made 0700 and checked, files read with a size limit,
/// files made whole or not at all and never replaced. Each failure is a ``DeviceIdentityError`` that names the path.
enum IdentityFiles {
    /// This process's effective user id: who must own the identity's directory and key.
    static var effectiveUserID: uid_t { geteuid() }

    /// What `lstat` says of a path; nil when nothing is there.
    static func status(_ path: String) throws(DeviceIdentityError) -> stat? {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            let code = errno
            if code == ENOENT { return nil }
            throw DeviceIdentityError(.unreadable(reason(code)), path: path)
        }
        return info
    }

    /// Makes `path` and its missing parents (mode 0700, as the XDG base directory specification asks of the
    /// directories it makes), then checks that `path` is a directory of this user that nobody else may write to.
    static func prepareDirectory(_ path: String) throws(DeviceIdentityError) {
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/", omittingEmptySubsequences: true) {
            prefix += "/" + component
            guard mkdir(prefix, 0o700) == 0 else {
                let code = errno
                if code == EEXIST { continue }
                throw DeviceIdentityError(.cannotCreate(reason(code)), path: prefix)
            }
        }
        var info = stat()
        guard stat(path, &info) == 0 else { throw DeviceIdentityError(.unreadable(reason(errno)), path: path) }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw DeviceIdentityError(.notADirectory, path: path) }
        guard info.st_uid == effectiveUserID else {
            throw DeviceIdentityError(.directoryNotOwned(owner: UInt32(info.st_uid)), path: path)
        }
        guard info.st_mode & 0o022 == 0 else {
            throw DeviceIdentityError(.directoryTooOpen(mode: UInt32(info.st_mode & 0o7777)), path: path)
        }
    }

    /// Checks that the key file at `path` is this user's and that nobody else may read or write it (as OpenSSH does
    /// with its private keys).
    static func checkKeyFile(_ path: String) throws(DeviceIdentityError) {
        var info = stat()
        guard stat(path, &info) == 0 else { throw DeviceIdentityError(.unreadable(reason(errno)), path: path) }
        guard info.st_uid == effectiveUserID else {
            throw DeviceIdentityError(.keyFileNotOwned(owner: UInt32(info.st_uid)), path: path)
        }
        guard info.st_mode & 0o077 == 0 else {
            throw DeviceIdentityError(.keyFileTooOpen(mode: UInt32(info.st_mode & 0o7777)), path: path)
        }
    }

    /// The content of the file at `path`, refused when it is larger than `limit` bytes.
    static func contents(of path: String, limit: Int) throws(DeviceIdentityError) -> String {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw DeviceIdentityError(.unreadable(reason(errno)), path: path) }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                let code = errno
                if code == EINTR { continue }
                throw DeviceIdentityError(.unreadable(reason(code)), path: path)
            }
            if count == 0 { break }
            bytes += chunk[..<count]
            if bytes.count > limit { throw DeviceIdentityError(.fileTooLarge(bytes.count), path: path) }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Writes `content` to a new file at `path` with permission bits `mode`, whole or not at all: it is written to a
    /// temporary file beside it, flushed, then linked to `path`, which fails when `path` exists. Returns false when
    /// `path` already exists (another process made it first): nothing is replaced.
    static func createNew(_ path: String, content: String, mode: mode_t) throws(DeviceIdentityError) -> Bool {
        let temporary = try writeTemporary(beside: path, content: content, mode: mode)
        defer { unlink(temporary) }
        guard link(temporary, path) == 0 else {
            let code = errno
            if code == EEXIST { return false }
            throw DeviceIdentityError(.cannotCreate(reason(code)), path: path)
        }
        return true
    }

    /// Writes `content` to `path` with permission bits `mode`, whole or not at all: a temporary file beside it,
    /// flushed, then renamed over it, so a reader sees the old file or the new one, never a part.
    static func replace(_ path: String, content: String, mode: mode_t) throws(DeviceIdentityError) {
        let temporary = try writeTemporary(beside: path, content: content, mode: mode)
        guard rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw DeviceIdentityError(.cannotCreate(reason(code)), path: path)
        }
    }

    /// A new file beside `path` (`PATH.new-XXXXXX`) holding `content`, mode `mode`, flushed to disk; its path. The
    /// caller links or renames it, and removes it.
    private static func writeTemporary(
        beside path: String, content: String, mode: mode_t
    ) throws(DeviceIdentityError) -> String {
        var template = Array((path + ".new-XXXXXX").utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { buffer -> Int32 in
            guard let base = buffer.baseAddress else { return -1 }
            return mkstemp(base)
        }
        guard descriptor >= 0 else { throw DeviceIdentityError(.cannotCreate(reason(errno)), path: path) }
        let temporary = String(decoding: template.dropLast().map { UInt8(truncatingIfNeeded: $0) }, as: UTF8.self)
        do throws(DeviceIdentityError) {
            defer { close(descriptor) }
            guard fchmod(descriptor, mode) == 0 else {
                throw DeviceIdentityError(.cannotCreate(reason(errno)), path: path)
            }
            var remaining = Array(content.utf8)[...]
            while !remaining.isEmpty {
                let written = remaining.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
                if written < 0 {
                    let code = errno
                    if code == EINTR { continue }
                    throw DeviceIdentityError(.cannotCreate(reason(code)), path: path)
                }
                remaining = remaining.dropFirst(written)
            }
            guard fsync(descriptor) == 0 else { throw DeviceIdentityError(.cannotCreate(reason(errno)), path: path) }
        } catch {
            unlink(temporary)
            throw error
        }
        return temporary
    }

    /// The system's sentence for an `errno` value.
    static func reason(_ code: Int32) -> String {
        String(cString: strerror(code))
    }
}
