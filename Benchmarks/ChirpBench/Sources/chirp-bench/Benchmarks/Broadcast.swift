import Chirp
import Foundation

#if os(Linux)
extension Harness {
    /// `broadcast` from this process to 16 sink processes: aggregate deliveries per second, and the CPU time this
    /// process spends per delivery (getrusage), next to its CPU per message when sending to one peer.
    func broadcast() throws -> [Figure] {
        let peers = plan.broadcastPeers
        let session = try ChirpSession(executable: executable, sinks: peers)
        defer { session.close() }
        // The sinks found each other too and connect among themselves (a full mesh, as 17 Chirp peers do); let that
        // settle so it does not run during the timed bursts. Measurement hygiene, not correctness.
        sleepSeconds(options.quick ? 1.5 : 3)
        let transceiver = session.transceiver

        func burst(_ count: Int) throws -> (seconds: Double, cpu: Double, acks: [Ack]) {
            session.resetAcks()
            try transceiver.send(Start(count: count), to: .all)
            let cpu = processCPUNanos()
            let start = nowNanos()
            for index in 0..<count { try transceiver.send(Small.sample(index), to: .all) }
            let acks = try session.waitForAcks(peers)
            return (Double(nowNanos() - start) / 1e9, Double(processCPUNanos() - cpu), acks)
        }
        let warm = try burst(2000)
        // A peer whose queue is full is skipped by `send(_:to: .all)`: keep a burst well under the 64 MiB outbound limit.
        let count = itemsPerRun(rate: 2000 / warm.seconds, minimum: 2000, maximum: 150_000)
        var rates: [Double] = []
        var cpuPerDelivery: [Double] = []
        var receiverCPU: [Double] = []
        for _ in 0..<plan.runs {
            let run = try burst(count)
            let deliveries = Double(count * peers)
            rates.append(deliveries / run.seconds)
            cpuPerDelivery.append(run.cpu / deliveries / 1000)
            receiverCPU.append(run.acks.map { Double($0.cpuNanos) }.reduce(0, +) / deliveries / 1000)
        }
        let oneWayCPU = shared["oneway.senderCPUMicros"]
        return [
            Figure(
                name: "broadcast.16",
                title: "broadcast of the small message from one process to \(peers) peer processes",
                unit: "deliveries/s", samples: rates,
                note:
                    "\(count) broadcasts/run; receivers' CPU per delivery \(formatNumber(Spread(receiverCPU).median)) µs",
                details: [
                    "broadcastsPerRun": Double(count), "peers": Double(peers),
                    "receiverCPUMicrosPerDelivery": Spread(receiverCPU).median
                ]),
            Figure(
                name: "broadcast.16.cpu", title: "sender CPU per delivery, broadcast to \(peers) peers (getrusage)",
                unit: "µs", samples: cpuPerDelivery,
                reference: oneWayCPU.map { .init(name: "oneway-sender-cpu-per-msg", value: $0) }, goal: .atMost(0.5),
                note: oneWayCPU == nil ? "run oneway too for the reference" : nil)
        ]
    }
}
#endif
