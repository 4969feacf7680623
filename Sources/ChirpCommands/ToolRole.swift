import Chirp

/// The metadata that marks a peer as one of this package's command-line tools (`listrctl`, `chirp`) rather than an
/// app: ``AppFinder/roleKey`` = ``AppFinder/cliRole``. A tool advertises it, so that another tool looking for "the app"
/// of a service passes it over (`chirp ping TYPE` without `--peer` pings the app, not a `chirp listen` on the same
/// type).
package enum ToolRole {
    /// The metadata key.
    package static var key: String { AppFinder.roleKey }
    /// The value that marks a tool.
    package static var cli: String { AppFinder.cliRole }

    /// Whether `peer` advertises itself as a tool.
    package static func isTool(_ peer: Peer) -> Bool { !AppFinder.isApp(peer) }
}
