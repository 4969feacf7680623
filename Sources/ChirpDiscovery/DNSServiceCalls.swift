import CDNSSD
import Dispatch

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a registration reports.
enum RegisterEvent: DNSSDFailureRepresentable {
    /// The service is registered under `name` (the daemon may have renamed it after a conflict).
    case registered(name: String)
    case failed(DNSSDError)
    static func failure(_ error: DNSSDError) -> Self { .failed(error) }
}

/// What a browse reports.
enum BrowseEvent: DNSSDFailureRepresentable {
    /// A service instance appeared on an interface.
    case added(name: String, type: String, domain: String, interfaceIndex: UInt32)
    /// A service instance disappeared from an interface.
    case removed(name: String, type: String, domain: String, interfaceIndex: UInt32)
    case failed(DNSSDError)
    static func failure(_ error: DNSSDError) -> Self { .failed(error) }
}

/// What a resolve reports.
enum ResolveEvent: DNSSDFailureRepresentable {
    /// The instance's target host, port and TXT record, and its addresses when the backend resolves them too
    /// (Avahi's own does; `dns_sd` does not: empty).
    case resolved(host: String, port: UInt16, txt: TXTRecord, interfaceIndex: UInt32, addresses: [String])
    case failed(DNSSDError)
    static func failure(_ error: DNSSDError) -> Self { .failed(error) }
}

/// What an address query reports.
enum AddressEvent: DNSSDFailureRepresentable {
    /// An IPv4 or IPv6 address of the host, as text.
    case address(String, interfaceIndex: UInt32)
    case failed(DNSSDError)
    static func failure(_ error: DNSSDError) -> Self { .failed(error) }
}

/// Thin Swift fronts for the four DNS-SD calls Chirp uses. Each returns a running operation; all run on `queue`.
enum DNSService {
    static func register(
        name: String, type: String, domain: String?, interfaceIndex: UInt32, port: UInt16, txt: TXTRecord,
        queue: DispatchQueue, releases: DispatchGroup? = nil, handler: @escaping (RegisterEvent) -> Void
    ) throws -> DNSServiceOperation<RegisterEvent> {
        let txtBytes = txt.bytes
        return try DNSServiceOperation(
            queue: queue, operation: "DNSServiceRegister", releases: releases, deliver: handler
        ) { ref, context in
            txtBytes.withUnsafeBytes { txtPointer in
                DNSServiceRegister(
                    ref, 0, interfaceIndex, name, type, domain, nil, port.bigEndian,
                    UInt16(txtPointer.count), txtPointer.baseAddress,
                    { _, _, error, name, _, _, context in
                        guard let context = DNSServiceOperation<RegisterEvent>.Context.from(context) else { return }
                        if error == kDNSServiceErr_NoError {
                            context.deliver(.registered(name: name.map { String(cString: $0) } ?? ""))
                        } else {
                            context.deliver(.failed(DNSSDError(code: error, operation: "DNSServiceRegister")))
                        }
                    }, context)
            }
        }
    }

    static func browse(
        type: String, domain: String?, interfaceIndex: UInt32, queue: DispatchQueue, releases: DispatchGroup? = nil,
        handler: @escaping (BrowseEvent) -> Void
    ) throws -> DNSServiceOperation<BrowseEvent> {
        try DNSServiceOperation(queue: queue, operation: "DNSServiceBrowse", releases: releases, deliver: handler) {
            ref, context in
            DNSServiceBrowse(
                ref, 0, interfaceIndex, type, domain,
                { _, flags, interface, error, name, type, domain, context in
                    guard let context = DNSServiceOperation<BrowseEvent>.Context.from(context) else { return }
                    guard error == kDNSServiceErr_NoError else {
                        context.deliver(.failed(DNSSDError(code: error, operation: "DNSServiceBrowse")))
                        return
                    }
                    let name = name.map { String(cString: $0) } ?? ""
                    let type = type.map { String(cString: $0) } ?? ""
                    let domain = domain.map { String(cString: $0) } ?? ""
                    if flags & DNSServiceFlags(kDNSServiceFlagsAdd) != 0 {
                        context.deliver(.added(name: name, type: type, domain: domain, interfaceIndex: interface))
                    } else {
                        context.deliver(.removed(name: name, type: type, domain: domain, interfaceIndex: interface))
                    }
                }, context)
        }
    }

    static func resolve(
        name: String, type: String, domain: String, interfaceIndex: UInt32, queue: DispatchQueue,
        releases: DispatchGroup? = nil, handler: @escaping (ResolveEvent) -> Void
    ) throws -> DNSServiceOperation<ResolveEvent> {
        try DNSServiceOperation(queue: queue, operation: "DNSServiceResolve", releases: releases, deliver: handler) {
            ref, context in
            DNSServiceResolve(
                ref, 0, interfaceIndex, name, type, domain,
                { _, _, interface, error, _, host, port, txtLength, txt, context in
                    guard let context = DNSServiceOperation<ResolveEvent>.Context.from(context) else { return }
                    guard error == kDNSServiceErr_NoError else {
                        context.deliver(.failed(DNSSDError(code: error, operation: "DNSServiceResolve")))
                        return
                    }
                    let record: TXTRecord
                    if let txt, txtLength > 0 {
                        record = TXTRecord(bytes: UnsafeBufferPointer(start: txt, count: Int(txtLength)))
                    } else {
                        record = TXTRecord()
                    }
                    let host = host.map { String(cString: $0) } ?? ""
                    context.deliver(
                        .resolved(
                            host: host, port: UInt16(bigEndian: port), txt: record, interfaceIndex: interface,
                            addresses: []))
                }, context)
        }
    }

    /// Queries the A (`ipv6: false`) or AAAA (`ipv6: true`) records of `host`.
    static func queryAddress(
        host: String, ipv6: Bool, interfaceIndex: UInt32, queue: DispatchQueue, releases: DispatchGroup? = nil,
        handler: @escaping (AddressEvent) -> Void
    ) throws -> DNSServiceOperation<AddressEvent> {
        let rrtype = UInt16(ipv6 ? kDNSServiceType_AAAA : kDNSServiceType_A)
        return try DNSServiceOperation(
            queue: queue, operation: "DNSServiceQueryRecord", releases: releases, deliver: handler
        ) { ref, context in
            DNSServiceQueryRecord(
                ref, 0, interfaceIndex, host, rrtype, UInt16(kDNSServiceClass_IN),
                { _, flags, interface, error, _, rrtype, _, rdlen, rdata, _, context in
                    guard let context = DNSServiceOperation<AddressEvent>.Context.from(context) else { return }
                    guard error == kDNSServiceErr_NoError else {
                        context.deliver(.failed(DNSSDError(code: error, operation: "DNSServiceQueryRecord")))
                        return
                    }
                    guard flags & DNSServiceFlags(kDNSServiceFlagsAdd) != 0, let rdata else { return }
                    let bytes = UnsafeRawBufferPointer(start: rdata, count: Int(rdlen))
                    if let text = Self.addressText(bytes, rrtype: rrtype) {
                        context.deliver(.address(text, interfaceIndex: interface))
                    }
                }, context)
        }
    }

    /// Formats A/AAAA record data as an address string; `nil` if the length does not fit the type.
    static func addressText(_ bytes: UnsafeRawBufferPointer, rrtype: UInt16) -> String? {
        let family: Int32
        switch (Int(rrtype), bytes.count) {
        case (Int(kDNSServiceType_A), 4): family = AF_INET
        case (Int(kDNSServiceType_AAAA), 16): family = AF_INET6
        default: return nil
        }
        var output = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard let base = bytes.baseAddress, inet_ntop(family, base, &output, socklen_t(output.count)) != nil else {
            return nil
        }
        return String(decoding: output.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
