/// Checks one sender's sequence numbers as they arrive: counts distinct ticks, duplicates (a number seen before)
/// and reorderings (a number below the highest seen so far, arriving for the first time).
struct SequenceCheck: Sendable {
    private var seen: [UInt64] = []
    private(set) var received: UInt64 = 0
    private(set) var distinct: UInt64 = 0
    private(set) var duplicated: UInt64 = 0
    private(set) var reordered: UInt64 = 0
    /// One past the highest number seen.
    private(set) var next: UInt64 = 0

    mutating func record(_ seq: UInt64) {
        received += 1
        // Bounded by what a sender can send in a run; a bogus huge number is counted, not allocated for.
        guard seq < 1 << 32 else {
            reordered += 1
            return
        }
        let word = Int(seq / 64)
        let bit = UInt64(1) << (seq % 64)
        if word >= seen.count {
            seen.append(contentsOf: repeatElement(0, count: max(word + 1 - seen.count, seen.count)))
        }
        if seen[word] & bit != 0 {
            duplicated += 1
            return
        }
        seen[word] |= bit
        distinct += 1
        if seq < next { reordered += 1 } else { next = seq + 1 }
    }
}
