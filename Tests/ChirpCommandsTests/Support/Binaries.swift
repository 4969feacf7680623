import Foundation

/// Where `swift build` put the executables (tests assume it ran first, as `make test` does).
enum Binaries {
    static let directory: URL = {
        let fileManager = FileManager.default
        if let path = ProcessInfo.processInfo.environment["CHIRP_BIN_PATH"] {
            return URL(fileURLWithPath: path)
        }
        // `swift test` runs the test bundle from the bin directory.
        var candidates: [URL] = []
        if let first = CommandLine.arguments.first {
            candidates.append(URL(fileURLWithPath: first).resolvingSymlinksInPath().deletingLastPathComponent())
        }
        candidates.append(Bundle.main.bundleURL.deletingLastPathComponent())
        candidates.append(Bundle.main.bundleURL)
        for candidate in candidates
        where fileManager.isExecutableFile(atPath: candidate.appendingPathComponent("listr").path) {
            return candidate
        }
        // Last resort: ask SwiftPM.
        let packageRoot = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["swift", "build", "--show-bin-path", "--package-path", packageRoot.path]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try? process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let path = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return URL(fileURLWithPath: path)
    }()

    static var listr: URL { directory.appendingPathComponent("listr") }
    static var listrctl: URL { directory.appendingPathComponent("listrctl") }
}
