import Foundation

/// The established TCP connections of this network namespace whose local port is one of `ports` (the accepting end of
/// each connection to a listener on those ports), from /proc/net/tcp and /proc/net/tcp6: what the kernel says, so it
/// counts connections that no event reports, such as a duplicate that lost the tie-break and is not closed yet.
func establishedConnections(toPorts ports: Set<Int>) -> Int {
    ["/proc/net/tcp", "/proc/net/tcp6"].reduce(0) { count, path in
        // Read to the end: the kernel makes these files a page at a time, and `String(contentsOfFile:)` reads one.
        let table = String(decoding: FileHandle(forReadingAtPath: path)?.readDataToEndOfFile() ?? Data(), as: UTF8.self)
        return count
            + table.split(separator: "\n").dropFirst().filter { row in
                // sl local_address rem_address st ...; an address is HEX:PORT (hex), state 01 is ESTABLISHED.
                let fields = row.split(separator: " ", omittingEmptySubsequences: true)
                guard fields.count > 3, fields[3] == "01", let port = fields[1].split(separator: ":").last,
                    let local = Int(port, radix: 16)
                else { return false }
                return ports.contains(local)
            }.count
    }
}
