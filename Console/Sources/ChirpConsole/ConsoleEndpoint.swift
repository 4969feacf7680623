/// Latency and error figures of one HTTP endpoint (method, host and path).
public struct ConsoleEndpoint: Sendable, Equatable {
    public var method: String
    public var host: String?
    public var path: String
    public var count: Int
    /// Exchanges with a status of 400 or more, or no response.
    public var errors: Int
    /// Milliseconds.
    public var p50: Double
    public var p90: Double
    public var p99: Double
}

extension ConsoleEndpoint {
    /// One stored exchange, as far as the figures need it.
    struct Exchange: Equatable {
        var method: String
        var host: String?
        var path: String
        /// `nil`: no response.
        var status: Int?
        /// Seconds.
        var duration: Double
    }

    /// Count, error count and latency percentiles (nearest rank) per endpoint, busiest first; endpoints as busy as
    /// each other by path, then method.
    static func summaries(of exchanges: [Exchange]) -> [ConsoleEndpoint] {
        struct Key: Hashable { var method: String, host: String?, path: String }
        var durations: [Key: [Double]] = [:]
        var errors: [Key: Int] = [:]
        for exchange in exchanges {
            let key = Key(method: exchange.method, host: exchange.host, path: exchange.path)
            durations[key, default: []].append(exchange.duration * 1000)
            if exchange.status.map({ $0 >= 400 }) ?? true { errors[key, default: 0] += 1 }
        }
        return durations.map { key, values in
            let sorted = values.sorted()
            func percentile(_ p: Double) -> Double {
                sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
            }
            return ConsoleEndpoint(
                method: key.method, host: key.host, path: key.path, count: sorted.count,
                errors: errors[key] ?? 0, p50: percentile(0.5), p90: percentile(0.9), p99: percentile(0.99))
        }.sorted { $0.count == $1.count ? ($0.path, $0.method) < ($1.path, $1.method) : $0.count > $1.count }
    }
}
