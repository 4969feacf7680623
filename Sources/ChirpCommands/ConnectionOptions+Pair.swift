import ArgumentParser
import Chirp
import ChirpSupport
import Foundation

extension ConnectionOptions {
    /// Pairs this command-line tool's device identity (`--identity`) with the app these options designate, as
    /// `listrctl pair` does: finds the app, prints the 6-digit code both sides show, and waits for the person at the
    /// app to compare it and say yes there. On success the app trusts this identity (with the permissions its person
    /// gave) and this identity pins the app; the tool's later commands connect as usual.
    ///
    /// `--timeout` bounds the search for the app; once the code is shown, the person at the app has 2 minutes (or what
    /// is left of a longer `--timeout`) to answer.
    ///
    /// Exits 0 once paired; 3 when no app with a device identity is found, 4 when several are and `--peer` does not
    /// choose, 6 when the pairing does not complete (declined, the app takes no pairing requests or is busy, no
    /// answer in time), 64 without `--identity` (``CommandExitCode``).
    public func pair() async throws {
        guard case .identity = try secret.security() else {
            throw ValidationError(
                "pairing needs a device identity: give --identity NAME|PATH or set \(SecretOptions.identityVariable) "
                    + "(`chirp id NAME` makes one and prints its fingerprint)")
        }
        if all { throw ValidationError("--all cannot be used to pair: pair with one app at a time (--peer NAME)") }
        var configuration = try makeTransmitter().configuration
        configuration.advertises = false
        let transceiver = Transceiver(configuration: configuration)
        let events = transceiver.makeEvents()
        let deadline = ContinuousClock.now + .milliseconds(Int64((timeout * 1000).rounded()))
        do {
            try await transceiver.start()
        } catch {
            StandardStreams.error("\(error)")
            throw ExitCode(CommandExitCode.noDaemon.rawValue)
        }
        WaitingNote.show(
            "waiting up to \(formatSeconds(timeout)) s for \(peer.map { "app '\($0)'" } ?? "the app") of service "
                + "'\(service)' (Ctrl-C to stop)...")
        let code: CommandExitCode
        switch await findAppToPair(transceiver: transceiver, events: events, until: deadline) {
        case .failure(let failure):
            WaitingNote.clear()
            StandardStreams.error(failure.message)
            code = failure.code
        case .success(let app):
            WaitingNote.clear()
            code = await pair(with: app, transceiver: transceiver, until: deadline)
        }
        await transceiver.shutdown()
        if code != .success { throw ExitCode(code.rawValue) }
    }

    /// How long `pair()` waits at least for the person at the app to answer, once the code is shown.
    static var pairingPatience: Duration { .seconds(120) }

    private struct PairFailure: Error {
        let message: String
        let code: CommandExitCode
    }

    private func pair(with app: Peer, transceiver: Transceiver, until deadline: ContinuousClock.Instant) async
        -> CommandExitCode
    {
        let label = app.identifiedLabel
        do {
            // A person compares the codes and answers: at least the app's own 2 minutes, whatever --timeout left.
            let patience = max(ContinuousClock.now.duration(to: deadline), Self.pairingPatience)
            let result = try await transceiver.pair(with: app, timeout: patience) { code in
                StandardStreams.output(
                    "Pairing code: \(code)\nCheck that \(UntrustedText.escaped(label)) shows the same code, and confirm there...\n"
                )
            }
            StandardStreams.output(
                "Paired with \(UntrustedText.escaped(result.name)) (\(result.fingerprint)): it trusts this device now.\n"
            )
            return .success
        } catch {
            StandardStreams.error("\(error)")
            return .refused
        }
    }

    /// Waits for the one app with a device identity that these options designate.
    private func findAppToPair(
        transceiver: Transceiver, events: AsyncStream<TransceiverEvent>, until deadline: ContinuousClock.Instant
    ) async -> Result<Peer, PairFailure> {
        let target: AppFinder.Target = peer.map { .named($0) } ?? .only
        // Once one is seen, a moment more for others of the same name to show up (without --peer, several apps
        // must be told apart).
        let settle = Duration.milliseconds(300)
        var firstSeen: ContinuousClock.Instant?
        // Woken by every change of the peers, at the end of the settle window and at the deadline.
        let (wakes, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let forwarding = Task {
            for await event in events {
                if case .availablePeersChanged = event { wake.yield() }
            }
        }
        let alarm = Task {
            try? await Task.sleep(until: deadline)
            wake.yield()
        }
        var settleAlarm: Task<Void, Never>?
        defer {
            forwarding.cancel()
            alarm.cancel()
            settleAlarm?.cancel()
            wake.finish()
        }
        var iterator = wakes.makeAsyncIterator()
        while true {
            let candidates = transceiver.availablePeers.filter {
                AppFinder.isApp($0) && $0.fingerprint != nil && target.matches($0)
            }
            let now = ContinuousClock.now
            if !candidates.isEmpty, firstSeen == nil {
                firstSeen = now
                settleAlarm = Task {
                    try? await Task.sleep(until: min(now + settle, deadline))
                    wake.yield()
                }
            }
            if let firstSeen, now >= firstSeen + settle || now >= deadline {
                if candidates.count == 1, let app = candidates.first { return .success(app) }
                let labels = AppFinder.sorted(candidates).map(\.identifiedLabel).joined(separator: ", ")
                return .failure(
                    PairFailure(
                        message: "several apps of service '\(service)' could be paired with: \(labels); "
                            + "choose one with --peer NAME|ID",
                        code: .severalApps))
            }
            if now >= deadline {
                let others = transceiver.availablePeers.filter { AppFinder.isApp($0) && target.matches($0) }
                let detail =
                    others.isEmpty
                    ? ""
                    : " (found without a device identity: \(others.map(\.identifiedLabel).joined(separator: ", ")))"
                return .failure(
                    PairFailure(
                        message: "no app of service '\(service)' with a device identity found within "
                            + "\(formatSeconds(timeout)) s\(detail)",
                        code: .noApp))
            }
            _ = await iterator.next()
        }
    }
}
