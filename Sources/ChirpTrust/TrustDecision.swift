/// Whether a peer is trusted, as a pure state machine: events in (a peer presented its certificate, the trust file
/// was reloaded, a pin was accepted), actions out (accept with permissions, refuse with a reason, pin, close the
/// connections of devices no longer trusted, write the pins or the trust file).
///
/// It does no I/O: the transport feeds it what the TLS handshake showed and carries out its actions; the file
/// watcher parses the trust file (all or nothing, ``TrustStore``) and feeds the store it got.
///
/// The modes:
/// - ``Mode/open``: every peer is accepted with every permission (today's default, no identities).
/// - ``Mode/trustedPeers(_:path:)``: a peer is accepted only if its fingerprint is in the trust file, with that
///   entry's permissions. A reload that drops a fingerprint closes its connections; one that changes its
///   permissions says so.
/// - ``Mode/trustOnFirstUse(_:path:permissions:)``: the first fingerprint seen under a peer name is pinned and
///   accepted; a different one under that name later is refused, every time, until a person accepts it.
///
/// In every mode a dialer refuses a peer whose certificate is not the fingerprint it advertised
/// (``dialerCheck(presented:advertised:name:)``).
package struct TrustDecision: Sendable {
    /// Whom a transceiver trusts.
    package enum Mode: Sendable, Equatable {
        /// Anybody, with every permission.
        case open
        /// The devices of a trust file, read from `path` (named in refusals).
        case trustedPeers(TrustStore, path: String)
        /// The first identity seen under each peer name, pinned in the file at `path` (named in refusals); a peer
        /// accepted this way holds `permissions`.
        case trustOnFirstUse(TrustPins, path: String, permissions: Set<Permission> = Permission.defaults)
    }

    /// Which way a connection goes.
    package enum Direction: Sendable, Equatable {
        /// The peer dialed us.
        case inbound
        /// We dialed the peer, which advertised `advertised` (its TXT `fp`; nil when it advertised none).
        case outbound(advertised: Fingerprint?)
    }

    /// What happened.
    package enum Event: Sendable, Equatable {
        /// A peer named `name` presented a certificate whose fingerprint is `fingerprint` on a connection going
        /// `direction`.
        case presented(Fingerprint, name: String, direction: Direction)
        /// The trust file was read again (and parsed whole) into this store.
        case storeReloaded(TrustStore)
        /// A person accepted `fingerprint` for the peer named `name` (a pairing confirmed, or a new identity after
        /// "peer identity has changed"): trusted from now on, with `permissions` in trusted-peers mode (with the
        /// mode's in trust-on-first-use mode; ignored in open mode).
        case pinAccepted(Fingerprint, name: String, permissions: Set<Permission> = Permission.defaults)
    }

    /// What to do.
    package enum Action: Sendable, Equatable {
        /// Let the connection in, the peer holding these permissions.
        case accept(Set<Permission>)
        /// Close the connection and report why.
        case refuse(TrustRefusal)
        /// Write this pin to the pins file (trust on first use): `fingerprint` under `name`.
        case pin(Fingerprint, name: String)
        /// Write the trust file with this content (a pin accepted in trusted-peers mode).
        case writeTrustFile(TrustStore)
        /// Close every connection of these devices: they are no longer trusted.
        case closeConnections(of: Set<Fingerprint>)
        /// The connections of this device now hold these permissions.
        case permissionsChanged(Fingerprint, Set<Permission>)
    }

    /// The mode, with the store or pins as they are now.
    package private(set) var mode: Mode

    /// A decision in `mode`.
    package init(mode: Mode) { self.mode = mode }

    /// What to do about `event`.
    package mutating func handle(_ event: Event) -> [Action] {
        switch event {
        case .presented(let fingerprint, let name, let direction):
            return presented(fingerprint, name: name, direction: direction)
        case .storeReloaded(let store):
            return reloaded(store)
        case .pinAccepted(let fingerprint, let name, let permissions):
            return accepted(fingerprint, name: name, permissions: permissions)
        }
    }

    /// The dialer's check, in every mode: the certificate a peer presents must be the one it advertised. Nil when it
    /// is, or when the peer advertised none; else the refusal.
    package static func dialerCheck(
        presented: Fingerprint, advertised: Fingerprint?, name: String
    ) -> TrustRefusal? {
        guard let advertised, advertised != presented else { return nil }
        return .fingerprintMismatch(presented, name: name, advertised: advertised)
    }

    // MARK: - Events

    private mutating func presented(_ fingerprint: Fingerprint, name: String, direction: Direction) -> [Action] {
        if case .outbound(let advertised) = direction,
            let refusal = Self.dialerCheck(presented: fingerprint, advertised: advertised, name: name)
        {
            return [.refuse(refusal)]
        }
        switch mode {
        case .open:
            return [.accept(Permission.all)]
        case .trustedPeers(let store, let path):
            guard let entry = store.entry(for: fingerprint) else {
                return [.refuse(.notTrusted(fingerprint, name: name, path: path))]
            }
            return [.accept(entry.permissions)]
        case .trustOnFirstUse(var pins, let path, let permissions):
            if let pinned = pins.fingerprint(for: name) {
                guard pinned == fingerprint else {
                    return [
                        .refuse(.identityChanged(fingerprint, name: name, pinned: pinned, path: path))
                    ]
                }
                return [.accept(permissions)]
            }
            pins.pin(fingerprint, name: name)
            mode = .trustOnFirstUse(pins, path: path, permissions: permissions)
            return [.pin(fingerprint, name: name), .accept(permissions)]
        }
    }

    private mutating func reloaded(_ store: TrustStore) -> [Action] {
        guard case .trustedPeers(let old, let path) = mode else { return [] }
        mode = .trustedPeers(store, path: path)
        var actions: [Action] = []
        var gone: Set<Fingerprint> = []
        for entry in old.entries {
            guard let now = store.entry(for: entry.fingerprint) else {
                gone.insert(entry.fingerprint)
                continue
            }
            if now.permissions != entry.permissions {
                actions.append(.permissionsChanged(entry.fingerprint, now.permissions))
            }
        }
        if !gone.isEmpty { actions.insert(.closeConnections(of: gone), at: 0) }
        return actions
    }

    private mutating func accepted(
        _ fingerprint: Fingerprint, name: String, permissions: Set<Permission>
    ) -> [Action] {
        switch mode {
        case .open:
            return []
        case .trustedPeers(var store, _):
            if let existing = store.entry(for: fingerprint) {
                guard existing.permissions != permissions else { return [] }
                store.remove(fingerprint)
            }
            // Not a duplicate: removed above if it was there.
            try? store.add(TrustEntry(fingerprint: fingerprint, label: name, permissions: permissions))
            return reloaded(store) + [.writeTrustFile(store)]
        case .trustOnFirstUse(var pins, let path, let modePermissions):
            let replaced = pins.pin(fingerprint, name: name)
            guard replaced != fingerprint else { return [] }
            mode = .trustOnFirstUse(pins, path: path, permissions: modePermissions)
            var actions: [Action] = [.pin(fingerprint, name: name)]
            // The identity it replaces is no longer trusted under that name.
            if let replaced, !pins.all.values.contains(replaced) {
                actions.insert(.closeConnections(of: [replaced]), at: 0)
            }
            return actions
        }
    }
}
