import ChirpSupport
import ChirpTrust
import Logging
import NIOConcurrencyHelpers

/// The one owner of a transceiver's ``TrustDecision`` in device-identity mode, and of the files behind it: the trust
/// file it reads again when it changes, the pins file it writes when it pins a peer.
///
/// Handshakes ask it about each peer (``decide(_:name:direction:)``, on their event loops); a repeating task asks it
/// to look at the trust file (``reloadIfChanged()``) and closes the connections of the devices it returns. The
/// decision itself is pure (``TrustDecision``): this carries out its file actions and hands back the rest.
final class TrustKeeper: Sendable {
    /// What a handshake is told.
    enum Verdict: Sendable, Equatable {
        case accept(Set<Permission>)
        case refuse(TrustRefusal)
    }

    private struct State {
        var decision: TrustDecision
        /// The trust file as last read (trusted-peers mode).
        var stamp: TrustFiles.Stamp?
        /// The last reload error logged, so that a broken file is reported once, not at every look.
        var lastProblem: String?
    }

    /// The trust file (trusted-peers mode) or the pins file (trust on first use).
    let path: String
    private let isTrustFile: Bool
    private let logger: Logger
    private let state: NIOLockedValueBox<State>

    /// Reads the trust or pins file `trust` names (by default in `identity`'s directory).
    ///
    /// - Throws: ``/ChirpSupport/ChirpError/Code/invalidConfiguration`` when the file cannot be read, belongs to
    ///   another user, may be written by other users, or has a malformed line: the sentence names the file and the
    ///   line.
    init(identity: DeviceIdentity, trust: PeerTrust, logger: Logger) throws {
        self.logger = logger
        do throws(DeviceIdentityError) {
            switch trust {
            case .trustedPeers(let file):
                let path = file ?? identity.directory + "/" + TrustFiles.trustFileName
                self.path = path
                isTrustFile = true
                let stamp = TrustFiles.stamp(of: path)
                let store = try TrustFiles.readStore(at: path)
                state = NIOLockedValueBox(
                    State(decision: TrustDecision(mode: .trustedPeers(store, path: path)), stamp: stamp))
            case .trustOnFirstUse(let file, let permissions):
                let path = file ?? identity.directory + "/" + TrustFiles.pinsFileName
                self.path = path
                isTrustFile = false
                let stamp = TrustFiles.stamp(of: path)
                let pins = try TrustFiles.readPins(at: path)
                state = NIOLockedValueBox(
                    State(
                        decision: TrustDecision(
                            mode: .trustOnFirstUse(pins, path: path, permissions: permissions)),
                        stamp: stamp))
            }
        } catch {
            throw ChirpError.invalidConfiguration(error.description, cause: error)
        }
    }

    /// Whether the peer named `name`, whose certificate has `fingerprint`, may connect, and with which permissions.
    /// A first pin is written to the pins file before the answer (a failure to write it is logged; the peer is
    /// accepted all the same for this run).
    func decide(_ fingerprint: Fingerprint, name: String, direction: TrustDecision.Direction) -> Verdict {
        state.withLockedValue { state -> Verdict in
            // The decision answers every presentation; refused should it not (fail closed).
            var verdict = Verdict.refuse(.notTrusted(fingerprint, name: name, path: path))
            for action in state.decision.handle(.presented(fingerprint, name: name, direction: direction)) {
                switch action {
                case .accept(let permissions): verdict = .accept(permissions)
                case .refuse(let refusal): verdict = .refuse(refusal)
                case .pin(let pinned, let pinnedName):
                    writePins(state.decision, pinned: pinned, name: pinnedName)
                    state.stamp = TrustFiles.stamp(of: path)  // our own write: nothing to read again
                case .writeTrustFile, .closeConnections, .permissionsChanged:
                    break  // not an answer to a peer presenting itself
                }
            }
            return verdict
        }
    }

    /// The permissions `fingerprint` holds now; nil when it is not trusted (any more).
    func permissions(of fingerprint: Fingerprint) -> Set<Permission>? {
        state.withLockedValue { state in
            switch state.decision.mode {
            case .open: return Permission.all
            case .trustedPeers(let store, _): return store.entry(for: fingerprint)?.permissions
            case .trustOnFirstUse(let pins, _, let permissions):
                return pins.all.values.contains(fingerprint) ? permissions : nil
            }
        }
    }

    /// Reads the trust file (or the pins file) again when it changed since it was last read; returns the devices no
    /// longer trusted, whose connections must close. A file that cannot be read or parsed is reported once
    /// (warning) and what was read before stays in use.
    ///
    /// A pin removed from the pins file lets the next identity under that name be pinned; it closes nothing (the
    /// identity pinned before was trusted, not revoked: revoking is the trust file's job).
    func reloadIfChanged() -> Set<Fingerprint> {
        state.withLockedValue { state in reload(&state) }
    }

    /// ``reloadIfChanged()``, the lock held.
    private func reload(_ state: inout State) -> Set<Fingerprint> {
        let stamp = TrustFiles.stamp(of: path)
        guard stamp != state.stamp else { return [] }
        do throws(DeviceIdentityError) {
            if isTrustFile {
                let store = try TrustFiles.readStore(at: path)
                state.stamp = stamp
                state.lastProblem = nil
                return apply(store, to: &state)
            }
            let pins = try TrustFiles.readPins(at: path)
            state.stamp = stamp
            state.lastProblem = nil
            if case .trustOnFirstUse(let old, let path, let permissions) = state.decision.mode, old != pins {
                state.decision = TrustDecision(mode: .trustOnFirstUse(pins, path: path, permissions: permissions))
                logger.info("read the pins file again", metadata: ["file": "\(path)", "pins": "\(pins.all.count)"])
            }
            return []
        } catch {
            if state.lastProblem != error.description {
                state.lastProblem = error.description
                logger.warning(
                    "the \(isTrustFile ? "trust" : "pins") file was not read again; the one read before stays in use: \(error)"
                )
            }
            return []
        }
    }

    /// Trusts `fingerprint`, the device named `name`, from now on, as a person said after a pairing: added to the
    /// trust file with `permissions` (trusted peers) or pinned under `name` (trust on first use, replacing the
    /// identity pinned before). The file is read first when it changed since, so an edit made meanwhile is kept; it
    /// is then written whole, and the decision changes only once it is.
    ///
    /// - Throws: ``DeviceIdentityError`` when the file cannot be written: nothing changed then.
    func trust(_ fingerprint: Fingerprint, name: String, permissions: Set<Permission>) throws(DeviceIdentityError) {
        let written = state.withLockedValue { state -> Result<Void, DeviceIdentityError> in
            _ = reload(&state)
            var decision = state.decision
            do throws(DeviceIdentityError) {
                for action in decision.handle(.pinAccepted(fingerprint, name: name, permissions: permissions)) {
                    switch action {
                    case .writeTrustFile(let store):
                        try TrustFiles.write(store.text, to: path)
                    case .pin:
                        if case .trustOnFirstUse(let pins, _, _) = decision.mode {
                            try TrustFiles.write(pins.text, to: path)
                        }
                    default:
                        break
                    }
                }
            } catch {
                return .failure(error)
            }
            state.decision = decision
            state.stamp = TrustFiles.stamp(of: path)  // our own write: nothing to read again
            return .success(())
        }
        try written.get()
        logger.notice(
            "trusting a paired device from now on",
            metadata: [
                "peer": "\(UntrustedText.escaped(name))", "fingerprint": "\(fingerprint)",
                "permissions": "\(Permission.list(permissions))", "file": "\(path)"
            ])
    }

    /// Feeds a trust file read again to the decision; returns the devices it no longer lists.
    private func apply(_ store: TrustStore, to state: inout State) -> Set<Fingerprint> {
        var gone: Set<Fingerprint> = []
        for action in state.decision.handle(.storeReloaded(store)) {
            switch action {
            case .closeConnections(let devices):
                gone.formUnion(devices)
                for device in devices.sorted() {
                    logger.notice(
                        "device \(device.short) was removed from the trust file: closing its connections",
                        metadata: ["file": "\(path)"])
                }
            case .permissionsChanged(let device, let permissions):
                logger.notice(
                    "device \(device.short) now holds \(Permission.list(permissions))", metadata: ["file": "\(path)"])
            default: break
            }
        }
        logger.info("read the trust file again", metadata: ["file": "\(path)", "devices": "\(store.entries.count)"])
        return gone
    }

    /// Writes the pins of `decision` (trust on first use) to the pins file.
    private func writePins(_ decision: TrustDecision, pinned: Fingerprint, name: String) {
        guard case .trustOnFirstUse(let pins, _, _) = decision.mode else { return }
        do throws(DeviceIdentityError) {
            try TrustFiles.write(pins.text, to: path)
            logger.notice(
                "pinned the identity of a new peer (trust on first use)",
                metadata: ["peer": "\(UntrustedText.escaped(name))", "fingerprint": "\(pinned)", "file": "\(path)"])
        } catch {
            logger.warning(
                "could not write the pins file; the peer is trusted for this run only: \(error)",
                metadata: ["peer": "\(UntrustedText.escaped(name))", "fingerprint": "\(pinned)"])
        }
    }
}
