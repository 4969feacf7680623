import ChirpCommands

/// Listr's command channel: the service type `listr` advertises and `listrctl` looks for unless told otherwise.
public enum ListrChannel: CommandChannel {
    /// `listrctl`, so that the CLI's name is also the service it talks to.
    public static let defaultServiceType = "listrctl"
}
