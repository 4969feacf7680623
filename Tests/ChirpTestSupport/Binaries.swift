import Foundation

/// Where `swift build` put the package's executables: `CHIRP_BIN_DIR` if set, else the directory of the test bundle
/// (SwiftPM builds both into one) or one of its parents, else `.build/debug` of this package.
public let binaryDirectory: String = {
    var candidates: [String] = []
    if let override = ProcessInfo.processInfo.environment["CHIRP_BIN_DIR"] { candidates.append(override) }
    var directory = URL(fileURLWithPath: CommandLine.arguments.first ?? ".").resolvingSymlinksInPath()
        .deletingLastPathComponent()
    for _ in 0..<4 {
        candidates.append(directory.path)
        directory = directory.deletingLastPathComponent()
    }
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()  // Tests/ChirpTestSupport/Binaries.swift
    candidates.append(root.appendingPathComponent(".build/debug").path)
    return candidates.first { FileManager.default.isExecutableFile(atPath: $0 + "/chirp") } ?? candidates.last ?? "."
}()

/// The path of the package's executable `name` (`chirp`, `chat`, `logdemo`, `listr`, `chirp-probe`, ...).
/// ``TestProcess`` says clearly when it is missing.
public func binaryPath(_ name: String) -> String {
    binaryDirectory + "/" + name
}

/// Throws ``TestProcessError`` when `path` is not an executable file, saying what to do about it.
public func requireExecutable(_ path: String) throws {
    guard FileManager.default.isExecutableFile(atPath: path) else {
        throw TestProcessError(
            message: "\(path) is missing or not executable: run `swift build` before `swift test` (make test does)")
    }
}
