import ArgumentParser
import Chirp
import ChirpCommands
import Foundation

/// `chirp trust list|add|remove`: the devices an app with a device identity trusts, in its trust file.
struct TrustCommand: AsyncParsableCommand, Sendable {
    static let configuration = CommandConfiguration(
        commandName: "trust",
        abstract: "List, add or remove the devices an identity trusts (its trust file).",
        discussion: """
            An app that uses a device identity with trusted peers accepts only the
            devices listed in its trust file, trusted-peers in the identity's
            directory: one line per device, its fingerprint, a label and what it
            may do (perms=read,write,logs,admin; without perms=, read,write,logs).
            A running app reads the file again when it changes: a device removed
            is disconnected within a second. The file can be edited by hand too;
            it must not be writable by other users.

            EXIT STATUS
              0 done; 1 the file cannot be read or written (the message says why);
              2 remove: the device was not in the file; 64 bad input (a
              fingerprint with a typo, an unknown permission, a device listed
              already). See 'chirp --help'.

            EXAMPLES
              Trust a laptop for read-only commands, in the identity listr:
                chirp trust add chirp:abcd-... laptop --identity listr --perms read
              The devices listr trusts:
                chirp trust list --identity listr
              Stop trusting it (its connections close):
                chirp trust remove chirp:abcd-... --identity listr
            """,
        subcommands: [List.self, Add.self, Remove.self])

    /// Which trust file: `--file`, else the identity's.
    struct FileOptions: ParsableArguments, Sendable {
        @Option(
            help: ArgumentHelp(
                "The identity (name or directory) whose trust file to use (default: $CHIRP_IDENTITY, else chirp).",
                valueName: "NAME|PATH"))
        var identity: String?

        @Option(help: ArgumentHelp("Use this trust file instead of the identity's.", valueName: "PATH"))
        var file: String?

        /// The trust file's path.
        func path() throws -> String {
            if let file { return file }
            let name = SecretOptions.identityName(identity)
            let directory =
                try name.flatMap { $0.contains("/") ? $0 : nil }
                ?? DeviceIdentity.defaultDirectory(name: name ?? "chirp")
            return directory + "/" + TrustFiles.trustFileName
        }

        /// The store in the trust file (empty when there is none).
        func read(_ path: String) throws -> TrustStore {
            do throws(DeviceIdentityError) {
                return try TrustFiles.readStore(at: path)
            } catch {
                throw CLIError(status: .failure, message: error.description)
            }
        }

        /// Writes `store` to the trust file, making the identity's directory if needed.
        func write(_ store: TrustStore, to path: String) throws {
            let directory = (path as NSString).deletingLastPathComponent
            if !directory.isEmpty, !FileManager.default.fileExists(atPath: directory) {
                try FileManager.default.createDirectory(
                    atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            }
            do throws(DeviceIdentityError) {
                try TrustFiles.write(store.text, to: path)
            } catch {
                throw CLIError(status: .failure, message: error.description)
            }
        }
    }

    /// `chirp trust list`.
    struct List: AsyncParsableCommand, Sendable {
        static let configuration = CommandConfiguration(abstract: "Print the trusted devices, one per line.")

        @OptionGroup var options: FileOptions

        func run() async throws {
            try await CommandRunner.run {
                let path = try options.path()
                let store = try options.read(path)
                for entry in store.entries {
                    Terminal.line(
                        "\(entry.fingerprint)  \(entry.shownLabel)  perms=\(Permission.list(entry.permissions))")
                }
                if store.entries.isEmpty { Terminal.note("no device is trusted in \(path)") }
                return .success
            }
        }
    }

    /// `chirp trust add`.
    struct Add: AsyncParsableCommand, Sendable {
        static let configuration = CommandConfiguration(
            abstract: "Trust a device: append its line to the trust file.")

        @Argument(help: "The device's fingerprint, as `chirp id` prints it on that device.")
        var fingerprint: String

        @Argument(help: "A label for people (one or more words).")
        var label: [String]

        @Option(
            help: ArgumentHelp(
                "What the device may do: read, write, logs, admin, comma-separated, or none (default: read,write,logs).",
                valueName: "LIST"))
        var perms: String?

        @OptionGroup var options: FileOptions

        func validate() throws {
            _ = try parsedFingerprint()
            _ = try parsedPermissions()
            if label.isEmpty { throw ValidationError("give the device a label, e.g. laptop") }
        }

        func run() async throws {
            let fingerprint = try parsedFingerprint()
            let permissions = try parsedPermissions()
            try await CommandRunner.run {
                let path = try options.path()
                var store = try options.read(path)
                let entry = TrustEntry(
                    fingerprint: fingerprint, label: label.joined(separator: " "), permissions: permissions)
                do throws(TrustStore.DuplicateError) {
                    try store.add(entry)
                } catch {
                    throw CLIError.badInput("\(error)", hint: "remove it first (chirp trust remove) to change its line")
                }
                try options.write(store, to: path)
                Terminal.line(
                    "trusted \(entry.fingerprint.short) (\(entry.shownLabel)) with \(Permission.list(permissions)) in \(path)"
                )
                return .success
            }
        }

        private func parsedFingerprint() throws -> Fingerprint {
            do {
                return try Fingerprint(parsing: fingerprint)
            } catch {
                throw ValidationError("\(error)")
            }
        }

        private func parsedPermissions() throws -> Set<Permission> {
            guard let perms else { return Permission.defaults }
            if perms == Permission.noneWord { return [] }
            var permissions: Set<Permission> = []
            for word in perms.split(separator: ",", omittingEmptySubsequences: false) {
                guard let permission = Permission(rawValue: String(word)) else {
                    let known = Permission.allCases.map(\.rawValue).joined(separator: ", ")
                    throw ValidationError(
                        "--perms: unknown permission '\(word)': the permissions are \(known), comma-separated, or none")
                }
                permissions.insert(permission)
            }
            return permissions
        }
    }

    /// `chirp trust remove`.
    struct Remove: AsyncParsableCommand, Sendable {
        static let configuration = CommandConfiguration(
            abstract: "Stop trusting a device: remove its line (a running app disconnects it within a second).")

        @Argument(help: "The device's fingerprint.")
        var fingerprint: String

        @OptionGroup var options: FileOptions

        func validate() throws {
            do { _ = try Fingerprint(parsing: fingerprint) } catch { throw ValidationError("\(error)") }
        }

        func run() async throws {
            let fingerprint: Fingerprint
            do { fingerprint = try Fingerprint(parsing: self.fingerprint) } catch { throw ValidationError("\(error)") }
            try await CommandRunner.run {
                let path = try options.path()
                var store = try options.read(path)
                guard let removed = store.remove(fingerprint) else {
                    throw CLIError.nothingFound("\(fingerprint.short) is not in the trust file \(path)")
                }
                try options.write(store, to: path)
                Terminal.line("removed \(removed.fingerprint.short) (\(removed.shownLabel)) from \(path)")
                return .success
            }
        }
    }
}
