// HTTP capture for URLSession, in a module of its own: on Linux URLSession lives in FoundationNetworking, which links
// libcurl and about forty more shared libraries, and loading them costs every process several milliseconds at start
// (Docs/Performance.md, "Start-up"). Apps that capture import this module; ChirpLogs, the CLIs and viewers do not pay.
import ChirpLogs
import Foundation
import NIOConcurrencyHelpers

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension LogSource {
    /// The one-line opt-in: returns `configuration` set up so that every HTTP(S) exchange of a `URLSession` made with
    /// it is recorded by this source (subject to `httpPolicy`).
    ///
    /// ```swift
    /// let session = URLSession(configuration: logs.capturingHTTP(.default))
    /// let (data, response) = try await session.data(for: request)   // recorded
    /// ```
    ///
    /// It works by putting a `URLProtocol` in front of the configuration's protocol classes; the request itself is
    /// carried out by an inner session with the same settings, so behaviour is unchanged. The response reaches the
    /// caller when it is complete (no incremental delivery). One source per process captures: the latest to call
    /// this. Switch capture off and on at run time with `isHTTPCaptureEnabled`.
    public func capturingHTTP(_ configuration: URLSessionConfiguration) -> URLSessionConfiguration {
        let copy = configuration.copy() as? URLSessionConfiguration ?? configuration
        HTTPCaptureProtocol.target.withLockedValue {
            $0 = CaptureTarget(source: self, baseConfiguration: configuration)
        }
        var classes = copy.protocolClasses ?? []
        classes.removeAll { $0 == HTTPCaptureProtocol.self }
        classes.insert(HTTPCaptureProtocol.self, at: 0)
        copy.protocolClasses = classes
        return copy
    }
}

/// Where captured exchanges go, and the session that performs the requests.
struct CaptureTarget: @unchecked Sendable {
    // @unchecked: URLSessionConfiguration is a class; it is copied here and never mutated afterwards.
    weak var source: LogSource?
    let session: URLSession

    init(source: LogSource, baseConfiguration: URLSessionConfiguration) {
        self.source = source
        let inner = baseConfiguration.copy() as? URLSessionConfiguration ?? .ephemeral
        inner.protocolClasses = (inner.protocolClasses ?? []).filter { $0 != HTTPCaptureProtocol.self }
        self.session = URLSession(configuration: inner)
    }
}

/// Records each exchange it carries out for the capturing source.
final class HTTPCaptureProtocol: URLProtocol {
    static let target = NIOLockedValueBox<CaptureTarget?>(nil)
    private static let handledKey = "chirp.logs.captured"
    private var loader: Loader?
    /// Inner tasks are created, and the outer session's client is called, from this queue: doing either from the
    /// outer session's own callbacks deadlocks swift-corelibs-foundation, which synchronises on its work queues.
    private static let workQueue = DispatchQueue(label: "chirp.logs.http-capture")

    /// Carries the protocol instance into the inner task's completion handler (and keeps it alive until then).
    private final class Reference: @unchecked Sendable {
        // @unchecked: used only on `workQueue`.
        let value: HTTPCaptureProtocol
        init(_ value: HTTPCaptureProtocol) { self.value = value }
    }

    /// The inner task, which `stopLoading` may cancel before it even exists.
    private final class Loader: @unchecked Sendable {
        // @unchecked: both fields are only touched with `lock` held.
        private let lock = NIOLock()
        private var task: URLSessionDataTask?
        private var cancelled = false

        /// Keeps `task` unless cancelled already; returns whether to start it.
        func start(_ task: URLSessionDataTask) -> Bool {
            lock.withLock {
                if cancelled { return false }
                self.task = task
                return true
            }
        }

        func cancel() {
            let task = lock.withLock { () -> URLSessionDataTask? in
                cancelled = true
                return self.task
            }
            task?.cancel()
        }
    }

    override class func canInit(with request: URLRequest) -> Bool {
        guard let scheme = request.url?.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            return false
        }
        guard URLProtocol.property(forKey: handledKey, in: request) == nil else { return false }
        return target.withLockedValue { $0?.source?.isHTTPCaptureEnabled ?? false }
    }

    override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

    override func startLoading() {
        guard let target = Self.target.withLockedValue({ $0 }) else {
            client?.urlProtocol(self, didFailWithError: URLError(.cancelled))
            return
        }
        var inner = request
        let body = Self.body(of: request)
        if inner.httpBody == nil, let body { inner.httpBody = body }
        if let mutable = (inner as NSURLRequest).mutableCopy() as? NSMutableURLRequest {
            URLProtocol.setProperty(true, forKey: Self.handledKey, in: mutable)
            inner = mutable as URLRequest
        }
        let start = Date()
        let clock = ContinuousClock()
        let started = clock.now
        let original = request
        let reference = Reference(self)
        let loader = Loader()
        self.loader = loader
        let session = target.session
        let source = target.source
        let request = inner
        Self.workQueue.async {
            let task = session.dataTask(with: request) { data, response, error in
                let elapsed = clock.now - started
                let duration = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
                source?.report(
                    Self.exchange(
                        request: original, body: body, response: response, data: data, error: error, start: start,
                        duration: duration))
                Self.workQueue.async {
                    let capture = reference.value
                    if let response {
                        capture.client?.urlProtocol(capture, didReceive: response, cacheStoragePolicy: .notAllowed)
                    }
                    if let data, !data.isEmpty { capture.client?.urlProtocol(capture, didLoad: data) }
                    if let error {
                        capture.client?.urlProtocol(capture, didFailWithError: error)
                    } else {
                        capture.client?.urlProtocolDidFinishLoading(capture)
                    }
                }
            }
            if loader.start(task) { task.resume() }
        }
    }

    override func stopLoading() {
        loader?.cancel()
    }

    /// The request body, from `httpBody` or by draining `httpBodyStream` (at most 16 MiB).
    private static func body(of request: URLRequest) -> Data? {
        if let body = request.httpBody { return body }
        guard let stream = request.httpBodyStream else { return nil }
        stream.open()
        defer { stream.close() }
        var data = Data()
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while data.count < 16 * 1024 * 1024 {
            let read = stream.read(&chunk, maxLength: chunk.count)
            if read <= 0 { break }
            data.append(contentsOf: chunk[0..<read])
        }
        return data
    }

    static func exchange(
        request: URLRequest, body: Data?, response: URLResponse?, data: Data?, error: (any Error)?, start: Date,
        duration: Double
    ) -> HTTPExchange {
        let http = response as? HTTPURLResponse
        let requestHeaders = (request.allHTTPHeaderFields ?? [:]).sorted { $0.key < $1.key }.map {
            HTTPHeader(name: $0.key, value: $0.value)
        }
        var responseHeaders: [HTTPHeader] = []
        if let http {
            for (key, value) in http.allHeaderFields {
                responseHeaders.append(HTTPHeader(name: "\(key)", value: "\(value)"))
            }
            responseHeaders.sort { $0.name.lowercased() < $1.name.lowercased() }
        }
        return HTTPExchange(
            method: request.httpMethod ?? "GET", url: request.url?.absoluteString ?? "", requestHeaders: requestHeaders,
            requestBody: body.flatMap { $0.isEmpty ? nil : HTTPBody($0) }, status: http?.statusCode,
            responseHeaders: responseHeaders, responseBody: data.flatMap { $0.isEmpty ? nil : HTTPBody($0) },
            startTime: start, duration: duration, error: error.map { "\($0.localizedDescription)" })
    }
}
