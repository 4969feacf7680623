import ArgumentParser
import Chirp
import ChirpCommands
import Foundation

/// `chirp id [NAME]`: this device's identity and its fingerprint, made on first use.
struct IdentityCommand: AsyncParsableCommand, Sendable {
    static let configuration = CommandConfiguration(
        commandName: "id",
        abstract: "Print the fingerprint of a device identity (made on first use).",
        discussion: """
            A device identity is a key and a self-signed certificate kept in
            $XDG_CONFIG_HOME/chirp/identity/NAME (~/.config/chirp/identity/NAME),
            readable by you only. Its fingerprint, chirp: and 13 groups of 4
            characters, is what other devices trust: give it to the owner of an
            app that uses identities, who adds it with chirp trust add. Compare
            it by another channel than the network (read it out, a chat you
            trust): that is what keeps a stranger from taking this device's place.

            The fingerprint goes to standard output, alone, so that a script can
            use it; where the identity is kept goes to standard error on a
            terminal.

            EXIT STATUS
              0 printed; 1 the identity cannot be made or read (the message names
              the file and what to run); 64 bad input. See 'chirp --help'.

            EXAMPLES
              The fingerprint of the identity chirp uses with --identity laptop:
                chirp id laptop
              On the app's machine, trust that device for read-only commands:
                chirp trust add chirp:abcd-... laptop --identity listr --perms read
            """)

    @Argument(help: "The identity's name, or its directory (a path with a /) (default: $CHIRP_IDENTITY, else chirp).")
    var name: String?

    func run() async throws {
        let name = SecretOptions.identityName(self.name)
        try await CommandRunner.run {
            let identity = try SecretOptions.identity(named: name ?? "chirp")
            Terminal.line(identity.fingerprint.description)
            Terminal.note("identity \"\(identity.name)\" in \(identity.directory)")
            return .success
        }
    }
}
