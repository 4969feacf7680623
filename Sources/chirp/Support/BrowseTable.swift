import Chirp
import ChirpDiscovery
import ChirpSupport
import Foundation

/// One service instance as `chirp browse` shows it.
struct BrowseRow: Sendable {
    /// `_chat._tcp`.
    var type: String
    var instance: ServiceInstance

    /// Identifies the row across found/lost events.
    var key: String { "\(type)/\(instance.instanceName)" }

    /// The address a peer dials, with the port: IPv4 preferred, then global IPv6, then link-local IPv6 with its
    /// scope; IPv6 in brackets, as `ping` takes it (`[fe80::1%eth0]:50123`).
    var address: String {
        guard let address = IPAddressText.dialingOrder(instance.addresses).first else { return "-:\(instance.port)" }
        return IPAddressText.endpoint(address, port: Int(instance.port))
    }

    /// The peer id shortened to the 8 characters `--peer` accepts, or `-` for a service that is not a Chirp peer.
    var shortID: String { instance.peerID.map { String($0.prefix(8)) } ?? "-" }

    /// `required` for a peer that requires a shared secret (its TXT record says `sec=1`), the first characters of
    /// its fingerprint for a peer with a device identity (`sec=id`: `chirp:abcd-efgh`, `identity` when the advertised
    /// one does not parse), `no` for another Chirp peer, `-` for a service that is not a Chirp peer.
    var secretText: String {
        if let fingerprint = fingerprintText { return fingerprint }
        guard instance.peerID != nil else { return instance.requiresSecret ? "required" : "-" }
        return instance.requiresSecret ? "required" : "no"
    }

    /// The first characters of the advertised fingerprint of a peer with a device identity; `identity` when it does
    /// not parse; nil for a peer without one.
    var fingerprintText: String? {
        guard instance.txt[TXTRecord.ReservedKey.secure] == "id" else { return nil }
        return advertisedFingerprint?.short ?? "identity"
    }

    /// The fingerprint the peer advertised, when it parses.
    var advertisedFingerprint: Fingerprint? {
        instance.txt[TXTRecord.ReservedKey.fingerprint].flatMap { try? Fingerprint(parsing: $0) }
    }

    /// User metadata as `key=value` pairs, sorted, or `-`.
    var metadataText: String {
        let pairs = instance.metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        return pairs.isEmpty ? "-" : pairs.joined(separator: " ")
    }

    /// The row as one JSON object for `--json`.
    func json(event: String) -> String {
        var object: [String: Any] = [
            "event": event,
            "type": type,
            "instance": instance.instanceName,
            "name": instance.name,
            "host": instance.host,
            "port": instance.port,
            "addresses": instance.addresses,
            "metadata": instance.metadata,
            "requiresSecret": instance.requiresSecret
        ]
        if let id = instance.peerID { object["peerID"] = id }
        if let version = instance.protocolVersion { object["protocolVersion"] = version }
        if let fingerprint = advertisedFingerprint { object["fingerprint"] = fingerprint.description }
        return JSONText.line(object)
    }

    /// `+ alice  alice.local.  127.0.0.1:50123  1a2b3c4d  required  room=lobby`, for live output into a pipe.
    func eventLine(_ mark: Character, showType: Bool) -> String {
        let fields =
            (showType ? [type] : []) + [instance.name, instance.host, address, shortID, secretText, metadataText]
        return "\(mark) " + fields.joined(separator: "  ")
    }
}

/// Renders rows as an aligned table.
enum BrowseTable {
    static func render(_ rows: [BrowseRow], showType: Bool) -> [String] {
        var header = ["NAME", "HOST", "ADDRESS", "PEER ID", "SECRET", "METADATA"]
        if showType { header.insert("TYPE", at: 0) }
        // Names, hosts and metadata are what the advertisers chose: escaped before their widths are measured.
        let cells = sorted(rows).map { row in
            ((showType ? [row.type] : [])
                + [row.instance.name, row.instance.host, row.address, row.shortID, row.secretText, row.metadataText])
                .map { UntrustedText.escaped($0) }
        }
        var widths = header.map(\.count)
        for line in cells {
            for (column, cell) in line.enumerated() { widths[column] = max(widths[column], cell.count) }
        }
        func format(_ line: [String]) -> String {
            line.enumerated().map { column, cell in
                column == line.count - 1 ? cell : cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }
        return [format(header)] + cells.map(format)
    }

    static func sorted(_ rows: [BrowseRow]) -> [BrowseRow] {
        rows.sorted {
            ($0.type, $0.instance.name, $0.instance.instanceName) < (
                $1.type, $1.instance.name, $1.instance.instanceName
            )
        }
    }
}
