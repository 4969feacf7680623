import Chirp
import ChirpCommands
import ChirpSupport
import Foundation

/// Asks the person at listr's terminal about each pairing request (`listr --allow-pairing`): the code and the
/// device on standard error, the answer (`y` or `yes`) read from standard input. Anything else, or the end of
/// standard input, declines.
struct PairingPrompt: Sendable {
    /// What a paired device may do (`--pair-permissions`).
    let permissions: Set<Permission>

    func ask(_ request: PairingRequest) async -> PairingAnswer {
        let question =
            "listr: pairing request from \"\(UntrustedText.escaped(request.name))\" on "
            + "\"\(UntrustedText.escaped(request.peerName))\" at \(request.address) "
            + "(\(request.fingerprint)).\nlistr: code \(request.code): pair only if listrctl shows the same code. "
            + "Pair, with \(Permission.list(permissions))? [y/N] "
        FileHandle.standardError.write(Data(question.utf8))
        let line = await Self.readLine()
        let answer = line?.trimmingCharacters(in: .whitespaces).lowercased()
        guard answer == "y" || answer == "yes" else {
            FileHandle.standardError.write(Data("listr: not paired\n".utf8))
            return .decline
        }
        return .accept(permissions)
    }

    /// One line of standard input, read on a thread of its own (reading blocks; the concurrency pool's threads
    /// must not); nil at its end.
    private static func readLine() async -> String? {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: Swift.readLine()) }.start()
        }
    }
}
