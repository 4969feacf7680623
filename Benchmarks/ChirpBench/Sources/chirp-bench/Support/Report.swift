import Foundation

#if os(Linux)
/// One measured figure, as printed and as written to the JSON file.
struct Figure: Codable {
    /// Where we want to be.
    struct Goal: Codable {
        /// "atLeast" or "atMost".
        var comparison: String
        var value: Double
        /// `nil`: the goal is on the figure itself; "reference" or "anchor": on its ratio to that measurement of the
        /// same run (absolute figures move a lot between machines of this kind; ratios much less).
        var relativeTo: String?

        static func atLeast(_ value: Double) -> Goal { Goal(comparison: "atLeast", value: value) }
        static func atMost(_ value: Double) -> Goal { Goal(comparison: "atMost", value: value) }
        /// At least `factor` times the reference (or the anchor) measured in the same run.
        static func ratioAtLeast(_ factor: Double, of measure: String = "reference") -> Goal {
            Goal(comparison: "atLeast", value: factor, relativeTo: measure)
        }
        /// At most `factor` times the reference (or the anchor) measured in the same run.
        static func ratioAtMost(_ factor: Double, of measure: String = "reference") -> Goal {
            Goal(comparison: "atMost", value: factor, relativeTo: measure)
        }

        func isMet(by value: Double) -> Bool { comparison == "atLeast" ? value >= self.value : value <= self.value }
        var text: String {
            (comparison == "atLeast" ? ">= " : "<= ") + formatNumber(value) + (relativeTo.map { "x \($0)" } ?? "")
        }
    }

    /// The same measurement without Chirp, taken in the same run.
    struct Reference: Codable {
        var name: String
        var value: Double
        var spread: Spread?
    }

    /// A short identifier (`oneway.small`).
    var name: String
    /// What was measured, in words.
    var title: String
    /// The median; `nil` when the figure could not be measured (see ``note``).
    var value: Double?
    var unit: String
    var spread: Spread?
    var reference: Reference?
    /// value / reference value.
    var ratio: Double?
    /// A second measurement of the same run to read the figure against: the library users compare Chirp with
    /// (pyzmq), where the reference is the plain socket.
    var anchor: Reference?
    /// value / anchor value.
    var anchorRatio: Double?
    var goal: Goal?
    var met: Bool?
    var note: String?
    /// Extra numbers that explain the figure (CPU per message, percentiles, ...).
    var details: [String: Double] = [:]

    init(
        name: String, title: String, unit: String, samples: [Double], reference: Reference? = nil,
        anchor: Reference? = nil, goal: Goal? = nil, note: String? = nil, details: [String: Double] = [:]
    ) {
        self.name = name
        self.title = title
        self.unit = unit
        let spread = Spread(samples)
        self.spread = samples.isEmpty ? nil : spread
        self.value = samples.isEmpty ? nil : spread.median
        self.reference = reference
        self.goal = goal
        self.note = note
        self.details = details
        self.anchor = anchor
        if let value, let reference, reference.value != 0 { ratio = value / reference.value }
        if let value, let anchor, anchor.value != 0 { anchorRatio = value / anchor.value }
        if let value, let goal {
            switch goal.relativeTo {
            case nil: met = goal.isMet(by: value)
            case "anchor": met = anchorRatio.map(goal.isMet(by:))
            default: met = ratio.map(goal.isMet(by:))
            }
        }
    }

    /// A figure that could not be measured in this run.
    static func pending(
        name: String, title: String, unit: String, goal: Goal?, note: String, reference: Reference? = nil
    ) -> Figure {
        Figure(name: name, title: title, unit: unit, samples: [], reference: reference, goal: goal, note: note)
    }

    /// The line printed for this figure.
    var line: String {
        var text = name.padding(toLength: 36, withPad: " ", startingAt: 0)
        if let value, let spread {
            text += "\(formatNumber(value)) \(unit)".leftPadded(to: 20)
            text += "  [\(formatNumber(spread.min))..\(formatNumber(spread.max)), n=\(spread.runs)]"
        } else {
            text += "pending".leftPadded(to: 20)
        }
        if let reference {
            text += "  ref \(reference.name) \(formatNumber(reference.value)) \(unit)"
            if let ratio { text += "  ratio \(String(format: "%.3f", ratio))" }
        }
        if let anchor {
            text += "  vs \(anchor.name) \(formatNumber(anchor.value)) \(unit)"
            if let anchorRatio { text += "  ratio \(String(format: "%.3f", anchorRatio))" }
        }
        if let goal {
            text += "  goal \(goal.text)"
            if let met {
                text += met ? " MET" : " NOT MET"
            } else if goal.relativeTo != nil {
                text += " (no \(goal.relativeTo ?? "") in this run)"
            }
        }
        if let note { text += "  (\(note))" }
        return text
    }
}

/// Three significant digits, thousands separated.
func formatNumber(_ value: Double) -> String {
    guard value.isFinite else { return "\(value)" }
    let magnitude = abs(value)
    if magnitude >= 1000 {
        let rounded = Int((value).rounded())
        let digits = String(abs(rounded))
        var grouped = ""
        for (index, character) in digits.enumerated() {
            if index > 0 && (digits.count - index) % 3 == 0 { grouped += "," }
            grouped.append(character)
        }
        return (rounded < 0 ? "-" : "") + grouped
    }
    if magnitude >= 100 { return String(format: "%.0f", value) }
    if magnitude >= 10 { return String(format: "%.1f", value) }
    if magnitude >= 1 { return String(format: "%.2f", value) }
    return String(format: "%.3g", value)
}

extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}

/// The machine and the load, recorded with the figures: the same code gives other numbers on a busy machine.
struct MachineInfo: Codable {
    var cpus: Int
    var cpuModel: String
    var memoryGiB: Double
    var kernel: String
    var loadAverage: [Double]

    static func current() -> MachineInfo {
        let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        let model =
            cpuinfo.split(separator: "\n").first { $0.hasPrefix("model name") }
            .map { $0.split(separator: ":", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) } ?? "" }
            ?? "unknown"
        var info = utsname()
        uname(&info)
        let release = withUnsafeBytes(of: &info.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        return MachineInfo(
            cpus: ProcessInfo.processInfo.activeProcessorCount, cpuModel: model,
            memoryGiB: (Double(ProcessInfo.processInfo.physicalMemory) / 1_073_741_824 * 10).rounded() / 10,
            kernel: release, loadAverage: Self.loadAverage())
    }

    static func loadAverage() -> [Double] {
        let text = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? ""
        return text.split(separator: " ").prefix(3).compactMap { Double($0) }
    }
}

/// Everything one run produced.
struct Results: Codable {
    var date: String
    var label: String?
    var quick: Bool
    var machine: MachineInfo
    /// The load average when each benchmark started, by benchmark.
    var loadAtStart: [String: [Double]] = [:]
    var loadAtEnd: [Double] = []
    var seconds: Double = 0
    var figures: [Figure] = []
}
#endif
