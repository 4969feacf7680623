import Chirp

/// How this package's command-line tools are told from apps.
///
/// A tool that only dials (`Configuration.advertises = false`: `listrctl`) is a `Peer.Role.tool` by its hello. The
/// `chirp` commands advertise themselves, and mark themselves in their metadata: ``key`` = ``cli`` (`chirp send`,
/// `chirp ping`, `chirp logs`; Chirp reads that mark as a tool's too, so apps leave them out of their peers and
/// broadcasts), or ``listener`` (`chirp listen`, which apps count as a peer: their broadcasts reach it). Another tool
/// looking for "the app" of a service passes over both (`chirp ping TYPE` without `--peer` pings the app, not a
/// `chirp listen` on the same type).
package enum ToolRole {
    /// The metadata key.
    package static var key: String { AppFinder.roleKey }
    /// The value that marks a tool.
    package static var cli: String { AppFinder.cliRole }
    /// The value that marks `chirp listen`: a tool to other tools, a peer like any other to apps.
    package static var listener: String { AppFinder.listenerRole }

    /// Whether `peer` is a tool rather than an app.
    package static func isTool(_ peer: Peer) -> Bool { !AppFinder.isApp(peer) }
}
