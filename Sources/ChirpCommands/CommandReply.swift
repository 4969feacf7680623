import Chirp

/// An app's answer to a command, with the app that gave it.
public struct CommandReply: Sendable {
    /// The app that answered.
    public var app: Peer
    /// Its response; `CommandResponse.failure(_:)` when it reported a failure.
    public var response: CommandResponse

    /// Creates a reply value.
    public init(app: Peer, response: CommandResponse) {
        self.app = app
        self.response = response
    }

    /// "NAME on HOST", to label replies from several apps.
    public var label: String { app.commandLabel }
}

/// What became of a command sent to one of several apps (`--all`): its response, or why there is none.
public struct CommandOutcome: Sendable {
    /// The app the command went to.
    public var app: Peer
    /// The app's response, or the error that kept it from arriving.
    public var result: Result<CommandResponse, CommandError>

    /// Creates an outcome value.
    public init(app: Peer, result: Result<CommandResponse, CommandError>) {
        self.app = app
        self.result = result
    }

    /// "NAME on HOST", to label the reply.
    public var label: String { app.commandLabel }

    /// The exit code for this app alone.
    public var exitCode: CommandExitCode {
        switch result {
        case .success(let response): return response.isSuccess ? .success : .appFailure
        case .failure(let error): return error.exitCode
        }
    }
}

extension Peer {
    /// "NAME on HOST" (the host without its trailing dot), or the name alone when the host is unknown.
    var commandLabel: String {
        guard let host = shownHost else { return name }
        return "\(name) on \(host)"
    }

    /// "NAME (ID) on HOST", ID being the first 8 characters of the peer id (as `chirp browse` shows it): tells apart
    /// two apps of the same name, in lists of candidates and `--all` headers.
    package var identifiedLabel: String {
        let name = "\(self.name) (\(id.prefix(8)))"
        guard let host = shownHost else { return name }
        return "\(name) on \(host)"
    }

    /// The host without its trailing dot; `nil` when unknown.
    private var shownHost: String? {
        guard var host, !host.isEmpty else { return nil }
        if host.hasSuffix(".") { host.removeLast() }
        return host
    }

    /// Whether this peer is a command-line tool rather than an app (``ToolRole``).
    package var isCommandLineTool: Bool { ToolRole.isTool(self) }
}
