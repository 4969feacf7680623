/// A number of seconds as Chirp's logs and tools print a measured or computed duration: rounded to what a reader can
/// use (two significant digits below 10 s, whole seconds above), with its unit, `0.14s`, `1.5s`, `30s`, rather than
/// `0.1420944925622629s`. `package`: the command-line tools use it too.
package enum SecondsText {
    /// `seconds` rounded, followed by `s`.
    package static func format(_ seconds: Double) -> String {
        guard seconds.isFinite else { return "\(seconds)s" }
        let magnitude = abs(seconds)
        if magnitude >= 10 || magnitude == 0 {
            return magnitude < 1e15 ? "\(Int64(seconds.rounded()))s" : "\(seconds)s"
        }
        // Two significant digits: the decimals that keeps, at most 6 (a microsecond).
        let exponent = magnitude.exponentFromLog10
        let decimals = min(6, max(0, 1 - exponent))
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let rounded = (seconds * scale).rounded() / scale
        var text = "\(rounded)"
        // `Double.description` writes 1e-05 for tiny values: the decimals were capped above that, so it is plain.
        if text.contains(".") {
            while text.hasSuffix("0") { text.removeLast() }
            if text.hasSuffix(".") { text.removeLast() }
        }
        return text + "s"
    }
}

extension Double {
    /// `floor(log10(self))` for a positive finite value, without Foundation: the power of ten of its first digit.
    fileprivate var exponentFromLog10: Int {
        var value = self
        var exponent = 0
        while value >= 10 {
            value /= 10
            exponent += 1
        }
        while value < 1 {
            value *= 10
            exponent -= 1
        }
        return exponent
    }
}
