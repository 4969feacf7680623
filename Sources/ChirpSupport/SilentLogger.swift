import Logging

extension Logger {
    /// A logger that discards everything: the default wherever Chirp takes a `Logger`. A library must not print on
    /// its own, and `Logger(label:)` would go to swift-log's default handler (standard output) in an app that never
    /// bootstrapped logging. So Chirp logs nothing until the app passes the logger it wants, as AsyncHTTPClient does.
    @usableFromInline
    package static let chirpSilent = Logger(label: "chirp", factory: { _ in SwiftLogNoOpLogHandler() })
}
