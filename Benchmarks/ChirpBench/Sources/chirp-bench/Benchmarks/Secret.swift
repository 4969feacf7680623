import Chirp
import Foundation

#if os(Linux)
extension Harness {
    /// `oneway.small` and `bulk.1MiB` again between peers that share a secret (`Configuration.security`), each with
    /// its figure without the secret, from the same run, as the reference: the ratio is what the secret costs.
    func secretFigures(_ session: ChirpSession, plain: [Figure]) throws -> [Figure] {
        func reference(_ name: String) -> Figure.Reference? {
            guard let figure = plain.first(where: { $0.name == name }), let value = figure.value else { return nil }
            return .init(name: "\(name) (no secret, same run)", value: value, spread: figure.spread)
        }
        var figures: [Figure] = []
        if options.wants("oneway") {
            let (count, runs) = try smallBursts(session)
            let rates = runs.map { Double(count) / $0.seconds }
            let senderCPU = runs.map { $0.senderCPU / Double(count) / 1000 }
            let receiverCPU = runs.map { Double($0.ack.cpuNanos) / Double(count) / 1000 }
            figures.append(
                Figure(
                    name: "oneway.small-secret",
                    title: "one-way throughput, small Codable message, two processes sharing a secret (TLS-PSK)",
                    unit: "msg/s", samples: rates, reference: reference("oneway.small"),
                    note:
                        "\(count) msgs/run; per msg: CPU sender \(formatNumber(Spread(senderCPU).median)) µs, receiver \(formatNumber(Spread(receiverCPU).median)) µs",
                    details: [
                        "messagesPerRun": Double(count), "senderCPUMicrosPerMessage": Spread(senderCPU).median,
                        "receiverCPUMicrosPerMessage": Spread(receiverCPU).median
                    ]))
        }
        if options.wants("bulk") {
            let mebibyte = 1 << 20
            let payload = Data(repeating: 0xAB, count: mebibyte)
            let warm = try burst(session, count: 16) { _ in payload }
            let count = itemsPerRun(rate: 16 / warm.seconds, minimum: 16, maximum: 4096)
            var rates: [Double] = []
            var senderCPU: [Double] = []
            var receiverCPU: [Double] = []
            for _ in 0..<plan.runs {
                let run = try burst(session, count: count) { _ in payload }
                guard run.ack.bytes == count * mebibyte else {
                    throw BenchError("the sink received \(run.ack.bytes) bytes, not \(count * mebibyte)")
                }
                rates.append(Double(count * mebibyte) / run.seconds / 1e9)
                senderCPU.append(run.senderCPU / Double(count) / 1e6)
                receiverCPU.append(Double(run.ack.cpuNanos) / Double(count) / 1e6)
            }
            figures.append(
                Figure(
                    name: "bulk.1MiB-secret",
                    title: "bulk: 1 MiB Data payloads between two processes sharing a secret (TLS-PSK)",
                    unit: "GB/s", samples: rates, reference: reference("bulk.1MiB"),
                    note:
                        "\(count) MiB/run; CPU per MiB: sender \(formatNumber(Spread(senderCPU).median)) ms, receiver \(formatNumber(Spread(receiverCPU).median)) ms",
                    details: [
                        "mebibytesPerRun": Double(count), "senderCPUMillisPerMiB": Spread(senderCPU).median,
                        "receiverCPUMillisPerMiB": Spread(receiverCPU).median
                    ]))
        }
        return figures
    }

    /// `plan.runs` bursts of small messages, after a warm-up burst that sizes them; `body` runs before each.
    func smallBursts(_ session: ChirpSession, before body: () -> Void = {}) throws -> (count: Int, runs: [Burst]) {
        let warm = try burst(session, count: options.quick ? 5000 : 20_000, Small.sample)
        let count = itemsPerRun(
            rate: Double(options.quick ? 5000 : 20_000) / warm.seconds, minimum: 5000, maximum: 400_000)
        var runs: [Burst] = []
        for _ in 0..<plan.runs {
            body()
            runs.append(try burst(session, count: count, Small.sample))
        }
        return (count, runs)
    }
}
#endif
