/// The identities a transceiver in trust-on-first-use mode has pinned: for each peer name, the fingerprint first seen
/// under it (as SSH's `known_hosts` keeps a host's key).
///
/// A name maps to one fingerprint; a fingerprint may be pinned under several names (a device that was renamed).
package struct TrustPins: Sendable, Equatable {
    private var byName: [String: Fingerprint]

    /// Pins, one per name.
    package init(_ pins: [String: Fingerprint] = [:]) { byName = pins }

    /// The fingerprint pinned under `name`, if any.
    package func fingerprint(for name: String) -> Fingerprint? { byName[name] }

    /// Pins `fingerprint` under `name`, replacing what was pinned there; returns the fingerprint replaced.
    @discardableResult
    package mutating func pin(_ fingerprint: Fingerprint, name: String) -> Fingerprint? {
        byName.updateValue(fingerprint, forKey: name)
    }

    /// Every pin, by name.
    package var all: [String: Fingerprint] { byName }
}
