/// The version every command-line tool of this package prints for `--version` (`chirp`, `listr`, `listrctl`, `chat`,
/// `logdemo`, `chirp-console`): the version of the Chirp checkout it was built from.
package enum ToolVersion {
    /// `1.0.0-dev` until the 1.0 release is tagged (CHANGELOG.md).
    package static let current = "1.0.0-dev"
}
