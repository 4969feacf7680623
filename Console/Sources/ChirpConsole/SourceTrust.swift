/// Whether the console trusts a log source that uses a device identity, as its viewer last found it: shown beside the
/// source's fingerprint (`trusted` in the API). Open sources and those with a shared secret have none.
enum SourceTrust: Sendable, Equatable {
    /// The console's viewer connected to the source with its device identity and follows it: each side's certificate
    /// was proven and accepted by the other.
    case trusted
    /// The source refused the console's viewer, or the viewer refused it (a `connectionRefused` naming it): its
    /// device is not trusted there, or the console has no device identity.
    case notTrusted

    /// The API's form: `true` for ``trusted``.
    var isTrusted: Bool { self == .trusted }
}
