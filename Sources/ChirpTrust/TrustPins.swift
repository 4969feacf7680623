import ChirpSupport

/// The identities a transceiver in trust-on-first-use mode has pinned: for each peer name, the fingerprint first seen
/// under it (as SSH's `known_hosts` keeps a host's key).
///
/// A name maps to one fingerprint; a fingerprint may be pinned under several names (a device that was renamed).
/// Names are kept as they are shown: their control characters escaped (``/ChirpSupport/UntrustedText``), so a name
/// read back from the pins file finds its pin.
package struct TrustPins: Sendable, Equatable {
    private var byName: [String: Fingerprint]

    /// Pins, one per name.
    package init(_ pins: [String: Fingerprint] = [:]) {
        byName = Dictionary(
            pins.map { (UntrustedText.escaped($0.key), $0.value) }, uniquingKeysWith: { _, last in last })
    }

    /// The fingerprint pinned under `name`, if any.
    package func fingerprint(for name: String) -> Fingerprint? { byName[UntrustedText.escaped(name)] }

    /// Pins `fingerprint` under `name`, replacing what was pinned there; returns the fingerprint replaced.
    @discardableResult
    package mutating func pin(_ fingerprint: Fingerprint, name: String) -> Fingerprint? {
        byName.updateValue(fingerprint, forKey: UntrustedText.escaped(name))
    }

    /// Every pin, by name.
    package var all: [String: Fingerprint] { byName }
}
