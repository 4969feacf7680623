import CDNSSD
import Dispatch

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One running DNS-SD operation: a `DNSServiceRef` whose socket is watched on a serial queue.
///
/// The daemon's replies arrive on the ref's socket; when it is readable, `DNSServiceProcessResult` runs the C callback,
/// on `queue`. Nothing here ever runs on a NIO event loop. All methods must be called on `queue`.
final class DNSServiceOperation<Event: DNSSDFailureRepresentable>: @unchecked Sendable {
    /// Carries the event handler to the C callbacks through their `void *context`.
    final class Context {
        let deliver: (Event) -> Void
        init(_ deliver: @escaping (Event) -> Void) { self.deliver = deliver }

        static func from(_ pointer: UnsafeMutableRawPointer?) -> Context? {
            guard let pointer else { return nil }
            return Unmanaged<Context>.fromOpaque(pointer).takeUnretainedValue()
        }
    }

    private let queue: DispatchQueue
    private let context: Context
    private var source: DispatchSourceRead?

    /// Starts an operation. `create` calls the DNS-SD function with the ref pointer and the context pointer.
    init(
        queue: DispatchQueue,
        operation: String,
        releases: DispatchGroup? = nil,
        deliver: @escaping (Event) -> Void,
        create: (UnsafeMutablePointer<DNSServiceRef?>, UnsafeMutableRawPointer) -> DNSServiceErrorType
    ) throws {
        dispatchPrecondition(condition: .onQueue(queue))
        DNSSDEnvironment.prepare()
        self.queue = queue
        let context = Context(deliver)
        self.context = context
        var ref: DNSServiceRef?
        let status = create(&ref, Unmanaged.passUnretained(context).toOpaque())
        guard status == kDNSServiceErr_NoError, let ref else {
            if let ref { DNSServiceRefDeallocate(ref) }
            throw DNSSDError(code: status, operation: operation)
        }
        let fd = DNSServiceRefSockFD(ref)
        guard fd >= 0 else {
            DNSServiceRefDeallocate(ref)
            throw DNSSDError(code: Int32(kDNSServiceErr_Unknown), operation: operation)
        }
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        nonisolated(unsafe) let unsafeRef = ref
        source.setEventHandler {
            // Runs the C callback (on this queue). An error here means the connection to the daemon broke.
            let result = DNSServiceProcessResult(unsafeRef)
            if result != kDNSServiceErr_NoError {
                source.cancel()
                context.deliver(.failure(DNSSDError(code: result, operation: "DNSServiceProcessResult")))
            }
        }
        releases?.enter()
        source.setCancelHandler {
            // Keeps `context` alive until the ref is gone, so no callback can see a freed context.
            withExtendedLifetime(context) { DNSServiceRefDeallocate(unsafeRef) }
            releases?.leave()
        }
        self.source = source
        source.resume()
    }

    /// Stops the operation and releases its ref and socket. Idempotent.
    func cancel() {
        dispatchPrecondition(condition: .onQueue(queue))
        source?.cancel()
        source = nil
    }

    deinit {
        source?.cancel()
    }
}

/// Event types of a DNS-SD operation: each can carry the failure of the operation itself.
protocol DNSSDFailureRepresentable {
    static func failure(_ error: DNSSDError) -> Self
}

/// Process-wide set-up of the DNS-SD library.
package enum DNSSDEnvironment {
    private static let once: Void = {
        // Avahi's compat layer prints a three-line warning on first use unless this is set.
        setenv("AVAHI_COMPAT_NOWARN", "1", 1)
    }()

    /// Call before the first DNS-SD call of the process.
    package static func prepare() { _ = once }

    /// The interface index of `name` (e.g. `lo`), or `nil` if there is no such interface.
    package static func interfaceIndex(named name: String) -> UInt32? {
        let index = if_nametoindex(name)
        return index == 0 ? nil : index
    }

    /// The name of interface `index` (e.g. `eth0`), or `nil` for 0 (all) or an index that names no interface.
    package static func interfaceName(index: UInt32) -> String? {
        guard index != 0 else { return nil }
        var buffer = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
        guard if_indextoname(index, &buffer) != nil else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The interface index of the loopback interface (`lo` on Linux, `lo0` on macOS), if there is one.
    package static let loopbackIndex: UInt32? = interfaceIndex(named: "lo") ?? interfaceIndex(named: "lo0")
}
