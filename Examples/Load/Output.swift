import Foundation

/// Writes one JSON object as a line on stdout (what the runner collects) and flushes it.
func emitJSON<T: Encodable>(_ value: T) {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    guard let data = try? encoder.encode(value) else { return }
    FileHandle.standardOutput.write(data + Data("\n".utf8))
}

/// Writes a line for people on stderr.
func say(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

/// Seconds since 1970, for lines that several processes' timelines are merged by.
func unixTime() -> Double { Date().timeIntervalSince1970 }

/// `value` with `digits` decimals.
func fixed(_ value: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", value) }
