/// The version of the Chirp checkout a tool was built from: what every command-line tool of this repository prints
/// for `--version` (`chirp`, `listr`, `listrctl`, `chat`, `logdemo`, `chirp-console`). A tool of your own built on
/// Chirp can show it beside its own version.
///
/// ```swift
/// static let configuration = CommandConfiguration(version: "2.1 (Chirp \(ToolVersion.current))")
/// ```
public enum ToolVersion {
    /// `1.0.0-dev` until the 1.0 release is tagged (CHANGELOG.md).
    public static let current = "1.0.0-dev"
}
