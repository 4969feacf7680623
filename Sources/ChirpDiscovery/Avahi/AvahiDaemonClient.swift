#if canImport(CAvahiClient)
import CAvahiClient
import CDNSSD
import Dispatch
import NIOConcurrencyHelpers

/// The process's one connection to avahi-daemon: an `AvahiClient` on an `AvahiThreadedPoll` (one thread), shared by
/// every transceiver, browser and resolve of the process.
///
/// Written against Avahi's C client library because no listed Swift package speaks to avahi-daemon.
///
/// **Threads.** The poll thread runs Avahi's callbacks with the poll's lock held. Everything else that touches an
/// Avahi object (creating, freeing) does it inside ``withClient(operation:_:)``, which takes that lock; the
/// callbacks only hand events to their operation's serial queue. So the state below (`client`, `state`,
/// `watchers`) is touched with the poll's lock held and nowhere else, which is what makes this class safe to share
/// (hence `@unchecked Sendable`: the compiler cannot see a C lock).
///
/// **The daemon.** The client is created with `AVAHI_CLIENT_NO_FAIL`: without a daemon it waits for one, and when the
/// daemon goes away it waits for it to come back. Every browse, resolve and registration is lost when the daemon goes:
/// each operation is then told the daemon is unavailable (its owner tears down and retries with backoff, as with the
/// `dns_sd` backend, and gets the same clear message). A client that failed for good (the system bus went away) is
/// replaced at the next attempt.
final class AvahiDaemonClient: @unchecked Sendable {
    /// The shared connection, created at first use; `nil` when the poll thread could not start.
    static let shared: AvahiDaemonClient? = AvahiDaemonClient()

    private let poll: OpaquePointer
    /// The client, created at first use and replaced after a failure. Under the poll's lock.
    private var client: OpaquePointer?
    private var state = AVAHI_CLIENT_CONNECTING
    private var failed = false
    /// Operations to tell when the daemon goes away, by id. Under the poll's lock.
    private var watchers: [UInt64: (DNSSDError) -> Void] = [:]
    private var nextWatcherID: UInt64 = 0
    /// Bumped each time the client is replaced: objects made on an older client were freed with it.
    private(set) var generationLocked: UInt64 = 0

    private init?() {
        guard let poll = avahi_threaded_poll_new() else { return nil }
        guard avahi_threaded_poll_start(poll) == 0 else {
            avahi_threaded_poll_free(poll)
            return nil
        }
        self.poll = poll
    }

    /// Creates the client (its D-Bus connection and first round trips to the daemon, a few milliseconds) on a
    /// background thread, unless it exists: the first operation then finds it ready.
    func connectInBackground() {
        DispatchQueue.global().async {
            self.withLock { _ = try? self.ensureClientLocked(operation: "avahi_client_new") }
        }
    }

    /// Runs `body` with the running client and the poll's lock held; throws when the daemon does not answer (yet).
    /// Never call from an Avahi callback (they run with the lock held already).
    func withClient<T>(operation: String, _ body: (OpaquePointer) throws -> T) throws -> T {
        avahi_threaded_poll_lock(poll)
        defer { avahi_threaded_poll_unlock(poll) }
        try ensureClientLocked(operation: operation)
        guard let client, state == AVAHI_CLIENT_S_RUNNING else {
            throw DNSSDError(avahiCode: Int32(AVAHI_ERR_NO_DAEMON), operation: operation)
        }
        return try body(client)
    }

    /// Creates the client, or replaces one that failed for good. Call with the poll's lock held.
    private func ensureClientLocked(operation: String) throws {
        if client == nil || failed {
            if let old = client { avahi_client_free(old) }  // frees every object made on it
            client = nil
            generationLocked += 1
            failed = false
            state = AVAHI_CLIENT_CONNECTING
            var error: Int32 = 0
            let userdata = Unmanaged.passUnretained(self).toOpaque()
            client = avahi_client_new(
                avahi_threaded_poll_get(poll), AVAHI_CLIENT_NO_FAIL,
                { client, state, userdata in
                    guard let userdata else { return }
                    Unmanaged<AvahiDaemonClient>.fromOpaque(userdata).takeUnretainedValue().stateChanged(
                        state, client: client)
                }, userdata, &error)
            if client == nil { throw DNSSDError(avahiCode: error, operation: operation) }
        }
    }

    /// Runs `body` with the poll's lock held (to free an Avahi object from outside a callback).
    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        avahi_threaded_poll_lock(poll)
        defer { avahi_threaded_poll_unlock(poll) }
        return try body()
    }

    /// Registers `onLoss`, called (on the poll thread) when the daemon goes away; returns the id to remove it with.
    /// Call with the poll's lock held.
    func watchLocked(_ onLoss: @escaping (DNSSDError) -> Void) -> UInt64 {
        nextWatcherID += 1
        watchers[nextWatcherID] = onLoss
        return nextWatcherID
    }

    /// Forgets a watcher. Call with the poll's lock held.
    func unwatchLocked(_ id: UInt64) {
        watchers[id] = nil
    }

    /// The error an Avahi call just failed with. Call with the poll's lock held.
    func lastErrorLocked(operation: String) -> DNSSDError {
        guard let client else { return DNSSDError(avahiCode: Int32(AVAHI_ERR_NO_DAEMON), operation: operation) }
        return DNSSDError(avahiCode: avahi_client_errno(client), operation: operation)
    }

    /// On the poll thread (or inside `avahi_client_new`), with the lock held.
    private func stateChanged(_ newState: AvahiClientState, client: OpaquePointer?) {
        state = newState
        switch newState {
        case AVAHI_CLIENT_S_RUNNING, AVAHI_CLIENT_S_REGISTERING:
            return
        case AVAHI_CLIENT_FAILURE:
            failed = true
            fallthrough
        default:
            // CONNECTING (the daemon went away), COLLISION (the host name is being renamed: registrations are
            // withdrawn), FAILURE: everything made on the old connection is gone.
            let code = newState == AVAHI_CLIENT_S_COLLISION ? Int32(AVAHI_ERR_COLLISION) : Int32(AVAHI_ERR_DISCONNECTED)
            let error = DNSSDError(avahiCode: code, operation: "avahi-daemon connection")
            let toTell = Array(watchers.values)
            watchers = [:]
            for onLoss in toTell { onLoss(error) }
        }
    }
}

extension DNSSDError {
    /// An Avahi error code as a ``DNSSDError``: "no daemon" as the `dns_sd` backend reports it (same message, same
    /// retries), anything else as a refusal that carries Avahi's own text.
    init(avahiCode: Int32, operation: String) {
        switch avahiCode {
        case Int32(AVAHI_ERR_NO_DAEMON), Int32(AVAHI_ERR_DISCONNECTED), Int32(AVAHI_ERR_BAD_STATE),
            Int32(AVAHI_ERR_DBUS_ERROR):
            self.init(code: Int32(kDNSServiceErr_Unknown), operation: operation)
        default:
            let text = avahi_strerror(avahiCode).map { String(cString: $0) } ?? "Avahi error"
            self.init(code: Int32(kDNSServiceErr_Refused), operation: operation, detail: "\(text) (\(avahiCode))")
        }
    }
}
#endif
