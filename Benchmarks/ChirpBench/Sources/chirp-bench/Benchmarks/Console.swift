import Chirp
import ChirpConsole
import ChirpLogs
import Foundation
import Logging

#if os(Linux)
import Glibc

extension Harness {
    /// Chirp Console (issue 17's goals): records/s stored with full-text indexing (into the store directly, then
    /// from a log source through a running console), a search over 1,000,000 stored records (request to response,
    /// over HTTP), and, when Chromium is installed, the page's first paint with those records stored and its memory
    /// and responsiveness while 10,000 records a second arrive (Benchmarks/console-page.py).
    func console() throws -> [Figure] {
        let quick = options.quick
        let total = quick ? 200_000 : 1_000_000
        let directory = NSTemporaryDirectory() + "chirp-bench-console-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var figures: [Figure] = []

        // 1. The store alone: batches of 1,000 (what a viewer receives at full speed), one transaction each.
        let source = LogSourceInfo(
            appName: "bench", host: "bench-host", processID: 1, streamID: "bench-stream", peerID: "p")
        let (ingestSeconds, stored) = try runBlocking {
            let store = try await ConsoleStore.open(path: directory + "/console.sqlite")
            let start = nowNanos()
            var sequence: UInt64 = 0
            while sequence < UInt64(total) {
                let batch = (0..<1000).map { _ -> LogRecord in
                    sequence += 1
                    return benchRecord(sequence)
                }
                try await store.insert(batch, from: source)
            }
            let seconds = Double(nowNanos() - start) / 1e9
            let count =
                try await store.records(matching: RecordFilter(), page: .latest, limit: 1).records.first?.record
                .sequence ?? 0
            await store.close()
            return (seconds, Int(count))
        }
        figures.append(
            Figure(
                name: "console.ingest",
                title: "records/s stored by the console's store with full-text indexing (batches of 1,000)",
                unit: "records/s", samples: [Double(total) / ingestSeconds], goal: .atLeast(100_000),
                note: "\(total) records in \(String(format: "%.1f", ingestSeconds)) s; \(total - stored) lost"))

        // 2. The same store behind a running console: searches over HTTP, and records from a real log source.
        let serviceType = freshServiceType()
        var configuration = ConsoleConfiguration(dataDirectory: directory)
        configuration.port = 0
        configuration.viewer.serviceType = serviceType
        configuration.viewer.transceiver.interface = .loopback
        configuration.viewer.transceiver.logger = Logger(label: "bench") { _ in SwiftLogNoOpLogHandler() }
        let portBox = Locked<Int>(0)
        let consoleTask = Task {
            try await ChirpConsole(
                configuration: configuration, logger: Logger(label: "bench") { _ in SwiftLogNoOpLogHandler() }
            )
            .run { port in portBox.set(port) }
        }
        defer {
            consoleTask.cancel()
            _ = try? runBlocking { _ = try? await consoleTask.value }
        }
        let deadline = Date().addingTimeInterval(20)
        while portBox.get() == 0 && Date() < deadline { usleep(10_000) }
        let port = portBox.get()
        guard port > 0 else { throw BenchError("console: the server did not start") }

        let words = [
            "declined", "order placed", "Zoë", "inventory", "item", "disk", "heartbeat", "Björn", "cache miss",
            "amount", "customer", "nothingmatchesthis"
        ]
        var searchMillis: [Double] = []
        for round in 0..<(quick ? 2 : 4) {
            for word in words {
                let query = word.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? word
                let start = nowNanos()
                let status = try httpGet(port: port, path: "/api/records?q=\(query)&limit=200")
                searchMillis.append(Double(nowNanos() - start) / 1e6)
                guard status == 200 else {
                    throw BenchError("console: search '\(word)' answered \(status) (round \(round))")
                }
            }
        }
        let sorted = searchMillis.sorted()
        figures.append(
            Figure(
                name: "console.search",
                title: "full-text search over \(total) stored records, request to response (HTTP, 200 per page)",
                unit: "ms", samples: searchMillis, goal: .atMost(50),
                note:
                    "\(searchMillis.count) searches of \(words.count) words; p90 \(formatNumber(sorted[sorted.count * 9 / 10])) ms",
                details: ["p90": sorted[sorted.count * 9 / 10]]))

        // From a log source in this process through discovery, the viewer protocol and the store.
        let endToEnd = quick ? 100_000 : 300_000
        let rate = try runBlocking {
            var sourceConfiguration = LogSourceConfiguration(appName: "bench-e2e")
            sourceConfiguration.serviceType = serviceType
            sourceConfiguration.transceiver.interface = .loopback
            sourceConfiguration.bufferCapacity = endToEnd + 1000
            sourceConfiguration.history = endToEnd + 1000
            let logs = try LogSource(configuration: sourceConfiguration)
            let logger = Logger(label: "bench.e2e") { logs.handler(label: $0) }
            for n in 1...endToEnd { logger.info("order placed by Ana", metadata: ["n": "\(n)"]) }
            let start = nowNanos()
            try await logs.start()
            var received = 0
            while received < endToEnd && Double(nowNanos() - start) / 1e9 < 120 {
                try await Task.sleep(for: .milliseconds(20))
                received = (try? sourcesRecords(port: port, app: "bench-e2e")) ?? received
            }
            let seconds = Double(nowNanos() - start) / 1e9
            await logs.stop()
            return (Double(received) / seconds, received)
        }
        figures.append(
            Figure(
                name: "console.ingest-e2e",
                title: "records/s from a log source to the console's store (discovery, viewer protocol, store)",
                unit: "records/s", samples: [rate.0], goal: .atLeast(100_000),
                note: "\(endToEnd) records of history, \(endToEnd - rate.1) missing at the end"))

        // 3. The page, when a browser is installed.
        figures += try consolePage(port: port, serviceType: serviceType, stored: total + endToEnd)
        return figures
    }

    private func consolePage(port: Int, serviceType: String, stored: Int) throws -> [Figure] {
        let script =
            ProcessInfo.processInfo.environment["CHIRP_BENCH_CONSOLE_PAGE_SCRIPT"] ?? "Benchmarks/console-page.py"
        guard FileManager.default.fileExists(atPath: script),
            FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium"),
            FileManager.default.isExecutableFile(atPath: "/usr/bin/chromedriver")
        else {
            return [
                Figure.pending(
                    name: "console.first-paint", title: "the page's first paint", unit: "ms", goal: .atMost(500),
                    note: "needs chromium and chromedriver (make console-deps)")
            ]
        }
        // 10,000 records a second from a source in this process while the page is watched.
        let live = Task {
            var configuration = LogSourceConfiguration(appName: "bench-live")
            configuration.serviceType = serviceType
            configuration.transceiver.interface = .loopback
            let logs = try LogSource(configuration: configuration)
            let logger = Logger(label: "bench.live") { logs.handler(label: $0) }
            try await logs.start()
            var n = 0
            while !Task.isCancelled {
                for _ in 0..<100 {
                    n += 1
                    logger.info("live record \(n)", metadata: ["n": "\(n)"])
                }
                try? await Task.sleep(for: .milliseconds(10))
            }
            await logs.stop()
        }
        defer { live.cancel() }
        let output = try runCommand([
            "python3", script, "--url", "http://127.0.0.1:\(port)/", "--seconds", options.quick ? "5" : "10"
        ])
        guard let line = output.split(separator: "\n").last(where: { $0.hasPrefix("{") }),
            let result = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        else {
            throw BenchError("console-page.py printed no result: \(output.suffix(500))")
        }
        let paints = (result["firstPaintMs"] as? [Double]) ?? []
        let heap = (result["heapMiB"] as? [Double]) ?? []
        let lag = (result["lagMs"] as? [Double]) ?? []
        let rows = (result["rowsInDomMax"] as? Double) ?? 0
        return [
            Figure(
                name: "console.first-paint",
                title: "the page's first rendered rows with \(stored) records stored (navigation to rows)",
                unit: "ms", samples: paints, goal: .atMost(500)),
            Figure(
                name: "console.tab-memory",
                title: "the tab's JavaScript heap while 10,000 records/s arrive (sampled every second)",
                unit: "MiB", samples: heap,
                note:
                    "max \(formatNumber(heap.max() ?? 0)) MiB; at most \(Int(rows)) rows in the DOM (the list is virtualised)"
            ),
            Figure(
                name: "console.event-loop-lag",
                title: "the page's main-thread delay (a 0 ms timer, sampled) while 10,000 records/s arrive",
                unit: "ms", samples: lag, note: "max \(formatNumber(lag.max() ?? 0)) ms")
        ]
    }
}

/// One record like logdemo's: varied messages, labels, levels and metadata.
private func benchRecord(_ n: UInt64) -> LogRecord {
    let customers = ["Zoë", "Björn", "Ana", "Li Lei", "Olu"]
    let customer = customers[Int(n % 5)]
    let (level, label, message, metadata): (Logger.Level, String, String, Logger.Metadata)
    switch n % 20 {
    case 0:
        (level, label, message, metadata) = (
            .warning, "demo.orders", "slow response from inventory", ["elapsed_ms": "\(180 + n % 70)"]
        )
    case 7:
        (level, label, message, metadata) = (
            .error, "demo.payments", "payment declined", ["customer": "\(customer)", "code": "card_declined"]
        )
    case 13: (level, label, message, metadata) = (.debug, "demo.cache", "cache miss", ["key": "item:\(n % 50)"])
    case 17: (level, label, message, metadata) = (.trace, "demo.cache", "heartbeat", [:])
    default:
        if n % 250 == 0 {
            (level, label, message, metadata) = (.critical, "demo.disk", "disk almost full", ["free_mb": "\(n % 100)"])
        } else {
            (level, label, message, metadata) = (
                .info, "demo.orders", "order placed by \(customer)",
                ["order": "\(1000 + n)", "amount": "\(n % 90 + 10).\(n % 100)", "customer": "\(customer)"]
            )
        }
    }
    return LogRecord(
        sequence: n, timestamp: Date(), level: level, label: label, message: message, metadata: metadata,
        appName: "bench", host: "bench-host", processID: 1)
}

/// A value shared with a task (the harness runs on plain threads).
private final class Locked<Value: Sendable>: @unchecked Sendable {
    // @unchecked: every access holds `lock`.
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func get() -> Value { lock.withLock { value } }
    func set(_ newValue: Value) { lock.withLock { value = newValue } }
}

/// The records the console's store holds for `app` (from /api/sources).
private func sourcesRecords(port: Int, app: String) throws -> Int {
    let (status, body) = try httpRequest(port: port, path: "/api/sources")
    guard status == 200, let document = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any],
        let sources = document["sources"] as? [[String: Any]]
    else { return 0 }
    return sources.filter { $0["app"] as? String == app }.compactMap { $0["records"] as? Int }.reduce(0, +)
}

/// The status of a GET over a plain socket (the body read and dropped).
private func httpGet(port: Int, path: String) throws -> Int { try httpRequest(port: port, path: path).0 }

/// One GET over a plain socket, `Connection: close`: status and body.
private func httpRequest(port: Int, path: String) throws -> (Int, String) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw BenchError("socket failed") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard connected == 0 else { throw BenchError("connect to the console failed") }
    let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n".utf8)
    _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
    var received: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count <= 0 { break }
        received.append(contentsOf: buffer[0..<count])
    }
    let text = String(decoding: received, as: UTF8.self)
    let status = Int(text.split(separator: " ").dropFirst().first ?? "") ?? 0
    let body = text.range(of: "\r\n\r\n").map { String(text[$0.upperBound...]) } ?? ""
    // A chunked body: the JSON starts at the first '{' (enough for these small documents).
    return (status, body.firstIndex(of: "{").map { String(body[$0...]) } ?? body)
}

/// Runs a command, returns its standard output (standard error passes through).
private func runCommand(_ arguments: [String]) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(decoding: data, as: UTF8.self)
}
#endif
