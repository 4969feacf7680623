import ChirpTrust
import Foundation
import Testing

@testable import Chirp

#if canImport(Glibc)
import Glibc
#endif

/// The trust keeper on real files in a scratch directory, without a network: what it answers, what a change of the
/// file does, what a broken file does (pure file I/O: fast).
@Suite(.timeLimit(.minutes(1))) struct TrustKeeperTests {
    let laptop = Fingerprint(spki: Array("laptop".utf8))
    let tablet = Fingerprint(spki: Array("tablet".utf8))

    @Test func aTrustFileEditIsReadWholeAndARemovedDeviceIsReturnedToClose() async throws {
        try await withScratch { scratch in
            let identity = try DeviceIdentity.loadOrCreate(name: "app", directory: scratch + "/app")
            let file = identity.directory + "/trusted-peers"
            try "\(laptop) laptop\n\(tablet) tablet perms=read\n".write(
                toFile: file, atomically: false, encoding: .utf8)
            let logs = LogCapture()
            let keeper = try TrustKeeper(identity: identity, trust: .trustedPeers(), logger: logs.logger("keeper"))
            #expect(keeper.decide(laptop, name: "laptop", direction: .inbound) == .accept(Permission.defaults))
            #expect(keeper.decide(tablet, name: "tablet", direction: .inbound) == .accept([.read]))
            #expect(keeper.reloadIfChanged().isEmpty)  // nothing changed

            // The laptop's line goes, the tablet may write now.
            try "\(tablet) tablet perms=read,write\n".write(toFile: file, atomically: false, encoding: .utf8)
            #expect(keeper.reloadIfChanged() == [laptop])
            #expect(keeper.permissions(of: tablet) == [.read, .write])
            #expect(keeper.permissions(of: laptop) == nil)
            guard case .refuse(let refusal) = keeper.decide(laptop, name: "laptop", direction: .inbound) else {
                Issue.record("the removed laptop was accepted")
                return
            }
            #expect(refusal.kind == .notTrusted)

            // A broken edit: nothing changes, said once.
            try "\(tablet) tablet perms=read,fly\n".write(toFile: file, atomically: false, encoding: .utf8)
            #expect(keeper.reloadIfChanged().isEmpty)
            #expect(keeper.permissions(of: tablet) == [.read, .write])
            try "\(tablet) tablet perms=read,fly \n".write(toFile: file, atomically: false, encoding: .utf8)
            #expect(keeper.reloadIfChanged().isEmpty)
            #expect(logs.text.components(separatedBy: "was not read again").count == 2, "\(logs.text)")

            // The file removed: nobody is trusted (the tablet's connections close).
            try FileManager.default.removeItem(atPath: file)
            #expect(keeper.reloadIfChanged() == [tablet])
        }
    }

    @Test func trustOnFirstUsePinsToTheFileAndAPinRemovedByHandLetsTheNextIdentityIn() async throws {
        try await withScratch { scratch in
            let identity = try DeviceIdentity.loadOrCreate(name: "cli", directory: scratch + "/cli")
            let file = identity.directory + "/known-peers"
            let keeper = try TrustKeeper(
                identity: identity, trust: .trustOnFirstUse(), logger: LogCapture().logger("k"))
            #expect(
                keeper.decide(laptop, name: "listr", direction: .outbound(advertised: laptop))
                    == .accept(Permission.defaults))
            #expect(try String(contentsOfFile: file, encoding: .utf8).contains("\(laptop) listr\n"))
            #expect(keeper.reloadIfChanged().isEmpty)  // its own write is not a change to read
            guard case .refuse(let refusal) = keeper.decide(tablet, name: "listr", direction: .inbound) else {
                Issue.record("another identity under a pinned name was accepted")
                return
            }
            #expect(refusal.kind == .identityChanged(pinned: laptop))

            // The person removes the pin: the next identity under that name is pinned.
            try "".write(toFile: file, atomically: false, encoding: .utf8)
            #expect(keeper.reloadIfChanged().isEmpty)
            #expect(keeper.decide(tablet, name: "listr", direction: .inbound) == .accept(Permission.defaults))
            #expect(try String(contentsOfFile: file, encoding: .utf8).contains("\(tablet) listr\n"))
        }
    }

    @Test func aTrustFileOthersMayWriteIsRefusedAtStart() async throws {
        try await withScratch { scratch in
            let identity = try DeviceIdentity.loadOrCreate(name: "app", directory: scratch + "/app")
            let file = identity.directory + "/trusted-peers"
            try "\(laptop) laptop\n".write(toFile: file, atomically: false, encoding: .utf8)
            #expect(chmod(file, 0o666) == 0)
            let error = #expect(throws: ChirpError.self) {
                try TrustKeeper(identity: identity, trust: .trustedPeers(), logger: LogCapture().logger("k"))
            }
            #expect("\(error.map { "\($0)" } ?? "")".contains("chmod 600"))
            // The positive control: the same file, mode 0600, is read.
            #expect(chmod(file, 0o600) == 0)
            let keeper = try TrustKeeper(identity: identity, trust: .trustedPeers(), logger: LogCapture().logger("k"))
            #expect(keeper.permissions(of: laptop) == Permission.defaults)
        }
    }
}
