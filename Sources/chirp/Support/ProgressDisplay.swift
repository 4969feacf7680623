import ChirpFiles
import Foundation

/// A transfer's progress on standard error: a bar redrawn in place on a terminal, else a plain line at each tenth.
struct ProgressDisplay {
    let label: String
    private var lastTenth = -1

    init(label: String) { self.label = label }

    /// `12.5 MiB`.
    static func bytes(_ count: Int64) -> String {
        let units = ["bytes", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(count)
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(count) bytes" : String(format: "%.1f", value) + " " + units[unit]
    }

    /// `[#########           ]  45%`.
    static func bar(_ fraction: Double, width: Int = 30) -> String {
        let clamped = min(max(fraction, 0), 1)
        let filled = Int(clamped * Double(width))
        let percent = Int(clamped * 100)
        return "[" + String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled) + "] "
            + String(repeating: " ", count: percent < 10 ? 2 : percent < 100 ? 1 : 0) + "\(percent)%"
    }

    mutating func show(_ progress: FileTransferProgress) {
        let sizes = "\(Self.bytes(progress.completedBytes)) of \(Self.bytes(progress.totalBytes))"
        if Terminal.stderrIsTTY {
            Terminal.status("\(label) \(Self.bar(progress.fractionCompleted)) \(sizes)")
            return
        }
        let tenth = Int(progress.fractionCompleted * 10)
        guard tenth != lastTenth else { return }
        lastTenth = tenth
        Terminal.plainError("\(label) \(tenth * 10)% \(sizes)")
    }
}
