/// Text that came from another peer (a type name, a peer name, a TXT value, metadata, a remote app's log message),
/// made safe to print on a terminal or write into a log.
///
/// A peer can put any character in the strings it sends. Printed as they are, a newline forges a second log line and
/// an escape sequence (`ESC ] 0 ; TITLE BEL`) drives the reader's terminal. `escaped` keeps the text readable and
/// turns every character that could do either into a visible escape: `\n`, `\r`, `\t`, and `\u{XX}` for the other C0
/// and C1 control characters, DEL, the line and paragraph separators and the bidirectional overrides (which can make
/// a line read differently from what it holds). Everything else, any language's letters and emoji included, is kept.
package enum UntrustedText {
    /// `text` with every control character escaped; `text` itself (no copy) when it holds none, the usual case.
    /// With `keepingNewlines`, line feeds stay as they are (a multi-line reply shown as lines; everything else that
    /// could drive a terminal is still escaped).
    package static func escaped(_ text: some StringProtocol, keepingNewlines: Bool = false) -> String {
        let needsEscape: (Unicode.Scalar) -> Bool = { Self.needsEscape($0) && !(keepingNewlines && $0 == "\n") }
        guard text.unicodeScalars.contains(where: needsEscape) else { return String(text) }
        var result = ""
        result.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            guard needsEscape(scalar) else {
                result.unicodeScalars.append(scalar)
                continue
            }
            switch scalar {
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            default: result += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            }
        }
        return result
    }

    /// Whether `scalar` is shown escaped by ``escaped(_:)``.
    package static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: return true  // C0 controls, DEL, C1 controls (0x9B is a terminal's CSI)
        case 0x2028, 0x2029: return true  // line and paragraph separators
        case 0x202A...0x202E, 0x2066...0x2069: return true  // bidirectional embeddings, overrides and isolates
        default: return false
        }
    }
}
