import Foundation

/// The DNS-SD instance names of `serviceType` (`chirp`-style, without `_` and `._tcp`) that an avahi-daemon knows
/// now, from `avahi-browse --terminate`: to show that a stale advertisement (of a killed process) is gone from the
/// daemon that a transceiver browses, so that nothing can bring it back. `start` runs the command (by default here;
/// a fault test runs it on a harness host).
public func advertisedInstances(
    of serviceType: String,
    start: @Sendable ([String]) async throws -> TestProcess = { command in
        try await TestProcess(command[0], Array(command.dropFirst()), input: .closed)
    }
) async throws -> Set<String> {
    let browse = try await start([
        "/usr/bin/avahi-browse", "--terminate", "--parsable", "--no-db-lookup", "_\(serviceType)._tcp"
    ])
    let status = try await browse.waitForExit()
    guard status == 0 else { throw TestProcessError(message: "avahi-browse failed (\(status))\n\(browse.transcript)") }
    return Set(browse.lines.compactMap(instanceName(inBrowseLine:)))
}

/// The instance name in a line of `avahi-browse --parsable` (`+;IFACE;PROTOCOL;NAME;TYPE;DOMAIN`), its escapes
/// (`\032` for a space, `\.`) undone; `nil` for other lines.
func instanceName(inBrowseLine line: String) -> String? {
    let fields = line.split(separator: ";", omittingEmptySubsequences: false)
    guard fields.count >= 6, fields[0] == "+" else { return nil }
    var name: [UInt8] = []
    var bytes = Array(fields[3].utf8)[...]
    while let byte = bytes.popFirst() {
        guard byte == UInt8(ascii: "\\") else {
            name.append(byte)
            continue
        }
        let digits = bytes.prefix(3)
        if digits.count == 3, digits.allSatisfy({ (48...57).contains($0) }),
            let code = UInt8(String(decoding: digits, as: UTF8.self))
        {
            name.append(code)
            bytes.removeFirst(3)
        } else if let escaped = bytes.popFirst() {
            name.append(escaped)
        }
    }
    return String(decoding: name, as: UTF8.self)
}
