import Foundation

/// What a file a peer names is called in the receiving directory: never a path, never hidden, never a name that
/// already exists there.
enum ReceivedFileName {
    /// The longest name kept, in UTF-8 bytes (most file systems' limit).
    static let maximumBytes = 200

    /// `name` made safe to create inside a directory: path separators and control characters become `_`, leading
    /// dots are dropped (no `..`, no hidden files), it is cut to ``maximumBytes``; empty becomes `file`.
    static func sanitised(_ name: String) -> String {
        var result = ""
        for scalar in name.unicodeScalars {
            let unsafe =
                scalar == "/" || scalar == "\\" || scalar == ":" || scalar.properties.generalCategory == .control
                || scalar.properties.generalCategory == .format || scalar.properties.generalCategory == .lineSeparator
                || scalar.properties.generalCategory == .paragraphSeparator
            result.unicodeScalars.append(unsafe ? "_" : scalar)
        }
        while result.hasPrefix(".") { result.removeFirst() }
        while result.utf8.count > maximumBytes { result.removeLast() }
        result = result.trimmingCharacters(in: .whitespaces)
        return result.isEmpty ? "file" : result
    }

    /// The candidates for `name` in turn: `name`, then `stem (1).ext`, `stem (2).ext`, ... up to `(999)`.
    static func candidates(for name: String) -> [String] {
        let url = URL(fileURLWithPath: name)
        let ext = url.pathExtension
        let stem = ext.isEmpty ? name : String(name.dropLast(ext.utf8.count + 1))
        return [name] + (1...999).map { ext.isEmpty ? "\(stem) (\($0))" : "\(stem) (\($0)).\(ext)" }
    }

    /// Moves `temporary` into `directory` under the first free candidate for `name`, without ever replacing a file
    /// (a hard link fails when the name exists), and returns the name used.
    static func moveIntoPlace(_ temporary: String, directory: String, name: String) throws -> String {
        for candidate in candidates(for: name) {
            let destination = (directory as NSString).appendingPathComponent(candidate)
            if link(temporary, destination) == 0 {
                unlink(temporary)
                return candidate
            }
            let error = errno
            if error == EEXIST { continue }
            // A file system without hard links: rename only when nothing is there (racy, but never silent).
            if error == EPERM || error == EXDEV || error == ENOTSUP {
                if FileManager.default.fileExists(atPath: destination) { continue }
                try FileManager.default.moveItem(atPath: temporary, toPath: destination)
                return candidate
            }
            throw FileTransferError(
                .fileError, "cannot move the file into \(directory): \(String(cString: strerror(error)))")
        }
        throw FileTransferError(.fileError, "\(name) and its 999 numbered variants all exist in \(directory)")
    }
}
