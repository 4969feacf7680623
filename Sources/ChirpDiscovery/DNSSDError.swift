import CDNSSD

/// An error code from the DNS-SD API, with a message that says what to do about it.
struct DNSSDError: Error, Equatable, CustomStringConvertible {
    /// The raw `DNSServiceErrorType`.
    var code: Int32
    /// The DNS-SD call that failed, e.g. `DNSServiceBrowse`.
    var operation: String
    /// What the implementation said, when it says more than the code (Avahi's own backend does).
    var detail: String? = nil

    init(code: Int32, operation: String, detail: String? = nil) {
        self.code = code
        self.operation = operation
        self.detail = detail
    }

    /// Whether the error means that no DNS-SD daemon answered (Avahi's compat layer reports it as "unknown").
    var daemonUnavailable: Bool {
        // -65563 is kDNSServiceErr_ServiceNotRunning (Bonjour's; Avahi's header does not define it).
        code == Int32(kDNSServiceErr_Unknown) || code == -65563 || code == Int32(kDNSServiceErr_NotInitialized)
    }

    var description: String {
        if daemonUnavailable {
            return
                "\(operation) failed: no DNS-SD daemon answered. Start avahi-daemon (and the system D-Bus it needs): "
                + "`sudo systemctl start avahi-daemon`, or `make deps` in the Chirp repository; Chirp keeps retrying"
        }
        if let detail { return "\(operation) failed: \(detail)" }
        return "\(operation) failed: \(Self.name(of: code)) (\(code))"
    }

    static func name(of code: Int32) -> String {
        switch Int(code) {
        case Int(kDNSServiceErr_NoSuchName): return "no such name"
        case Int(kDNSServiceErr_NoMemory): return "out of memory"
        case Int(kDNSServiceErr_BadParam): return "bad parameter"
        case Int(kDNSServiceErr_BadReference): return "bad reference"
        case Int(kDNSServiceErr_BadState): return "bad state"
        case Int(kDNSServiceErr_BadFlags): return "bad flags"
        case Int(kDNSServiceErr_Unsupported): return "unsupported by this DNS-SD implementation"
        case Int(kDNSServiceErr_AlreadyRegistered): return "already registered"
        case Int(kDNSServiceErr_NameConflict): return "name conflict"
        case Int(kDNSServiceErr_Invalid): return "invalid"
        case Int(kDNSServiceErr_Incompatible): return "client library incompatible with the daemon"
        case Int(kDNSServiceErr_BadInterfaceIndex): return "bad interface index"
        case Int(kDNSServiceErr_Refused): return "refused"
        case Int(kDNSServiceErr_NoSuchRecord): return "no such record"
        default: return "DNS-SD error"
        }
    }
}
