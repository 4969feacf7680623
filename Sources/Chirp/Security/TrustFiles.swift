import ChirpSupport
import ChirpTrust
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The trust file (`trusted-peers`) and the pins file (`known-peers`) on disk: read whole, written whole.
///
/// Reading refuses a file another user owns or may write to (as OpenSSH refuses such an `authorized_keys`): whoever
/// can write it decides who may connect. A missing file is an empty store (nobody trusted yet) or no pins. Writing
/// goes to a temporary file beside it, then a rename, so a reader (this process's watcher, `chirp trust`) sees the old
/// file or the new one, never a part.
package enum TrustFiles {
    /// The trust file's name in an identity's directory.
    package static let trustFileName = "trusted-peers"
    /// The pins file's name in an identity's directory.
    package static let pinsFileName = "known-peers"
    /// The largest trust or pins file read, in bytes (a line is some 80).
    package static let maximumSize = 1 << 20

    /// What is on disk at a path, to tell a change without reading the file.
    package struct Stamp: Sendable, Equatable {
        var device: UInt64
        var inode: UInt64
        var size: Int64
        var modified: Int64
        var changed: Int64
    }

    /// The file's stamp; nil when there is no file.
    package static func stamp(of path: String) -> Stamp? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Stamp(
            device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size),
            modified: Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec),
            changed: Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec))
    }

    /// The trust store in the file at `path`; an empty store when there is no file.
    package static func readStore(at path: String) throws(DeviceIdentityError) -> TrustStore {
        guard let text = try checkedText(at: path) else { return TrustStore() }
        do {
            return try TrustStore(parsing: text, path: path)
        } catch {
            throw DeviceIdentityError(.unparsableTrustFile(error.description), path: path)
        }
    }

    /// The pins in the file at `path`; none when there is no file.
    package static func readPins(at path: String) throws(DeviceIdentityError) -> TrustPins {
        guard let text = try checkedText(at: path) else { return TrustPins() }
        do {
            return try TrustPins(parsing: text, path: path)
        } catch {
            throw DeviceIdentityError(.unparsableTrustFile(error.description), path: path)
        }
    }

    /// Writes `text` to `path` (mode 0600), whole.
    package static func write(_ text: String, to path: String) throws(DeviceIdentityError) {
        try IdentityFiles.replace(path, content: text, mode: 0o600)
    }

    /// The file's text, after checking who may write it; nil when there is no file.
    private static func checkedText(at path: String) throws(DeviceIdentityError) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else {
            let code = errno
            if code == ENOENT { return nil }
            throw DeviceIdentityError(.unreadable(IdentityFiles.reason(code)), path: path)
        }
        guard info.st_uid == IdentityFiles.effectiveUserID else {
            throw DeviceIdentityError(.trustFileNotOwned(owner: UInt32(info.st_uid)), path: path)
        }
        guard info.st_mode & 0o022 == 0 else {
            throw DeviceIdentityError(.trustFileTooOpen(mode: UInt32(info.st_mode & 0o7777)), path: path)
        }
        return try IdentityFiles.contents(of: path, limit: maximumSize)
    }
}
