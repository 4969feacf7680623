import Chirp
import ChirpCommands
import Foundation
import Testing

/// `CommandError`: one struct with an extensible code, the exit code it maps to, and the sentence the tools print,
/// word for word as before it was a struct.
@Suite(.timeLimit(.minutes(5))) struct CommandErrorTests {
    let kitchen = Peer(id: "K1", name: "kitchen", metadata: [:], host: "box.local.")

    @Test func eachFunctionKeepsItsSentenceItsDataAndItsExitCode() {
        let noApp = CommandError.noApp(service: "listr", peer: nil, seconds: 5, detail: nil)
        #expect(noApp.code == .noApp && noApp.exitCode == .noApp)
        #expect(noApp.message == "no app found on service 'listr' within 5 s; is it running, with the same --service?")
        #expect(noApp.service == "listr" && noApp.peerName == nil && noApp.seconds == 5 && noApp.detail == nil)

        let named = CommandError.noApp(
            service: "listr", peer: "kitchen", seconds: 2.5, detail: "apps seen: hall on box")
        #expect(
            named.message
                == "no app named 'kitchen' found on service 'listr' within 2.5 s (apps seen: hall on box); "
                + "is it running, with the same --service?")
        #expect(named.peerName == "kitchen" && named.detail == "apps seen: hall on box")

        let several = CommandError.severalApps(service: "listr", apps: ["a on h", "b on h"])
        #expect(several.code == .severalApps && several.exitCode == .severalApps)
        #expect(
            several.message
                == "several apps answer on service 'listr': a on h, b on h; "
                + "choose one with --peer NAME (or the start of its ID, when names repeat), or send to all with --all")
        #expect(several.apps == ["a on h", "b on h"] && several.service == "listr")

        let ambiguous = CommandError.ambiguousPeer(
            service: "listr", peer: "kitchen", apps: ["kitchen (A1B2C3D4) on h", "kitchen (E5F6A7B8) on h"])
        #expect(ambiguous.code == .severalApps && ambiguous.exitCode == .severalApps)
        #expect(
            ambiguous.message
                == "--peer 'kitchen' matches 2 apps on service 'listr': kitchen (A1B2C3D4) on h, kitchen (E5F6A7B8) on h; "
                + "choose one with --peer ID (at least its first 4 characters), or send to all with --all")
        #expect(ambiguous.peerName == "kitchen" && ambiguous.apps.count == 2)

        let noDaemon = CommandError.noDaemon(detail: "avahi_service_browser_new failed: Daemon not running")
        #expect(noDaemon.code == .noDaemon && noDaemon.exitCode == .noDaemon && noDaemon.exitCode.rawValue == 69)
        #expect(
            noDaemon.message
                == "no DNS-SD daemon answers (avahi_service_browser_new failed): peers can be neither found nor advertised"
        )
        #expect(noDaemon.detail == "avahi_service_browser_new failed: Daemon not running")

        let lost = CommandError.connectionLost(app: "kitchen on box", peer: kitchen)
        #expect(lost.code == .connectionLost && lost.exitCode == .connectionLost)
        #expect(lost.message == "lost the connection to kitchen on box before it replied")
        #expect(lost.app == "kitchen on box" && lost.peer == kitchen)
        // With what became of the command (the request's ChirpError.reason).
        let mayHaveRun = CommandError.connectionLost(
            app: "kitchen on box", peer: kitchen, detail: "the request had been sent, so the peer may have run it")
        #expect(
            mayHaveRun.message
                == "lost the connection to kitchen on box before it replied: the request had been sent, so the peer may "
                + "have run it")
        #expect(mayHaveRun.detail == "the request had been sent, so the peer may have run it")

        let silent = CommandError.noReply(app: "kitchen on box", seconds: 10)
        #expect(silent.code == .noReply && silent.exitCode == .connectionLost)
        #expect(silent.message == "no reply from kitchen on box within the 10 s timeout")
        #expect(silent.app == "kitchen on box" && silent.seconds == 10 && silent.peer == nil)

        let refused = CommandError.refused(service: "listr", reasons: ["kitchen needs a secret", "hall said no"])
        #expect(refused.code == .refused && refused.exitCode == .refused)
        #expect(refused.message == "refused on service 'listr': kitchen needs a secret; hall said no")
        #expect(refused.reasons == ["kitchen needs a secret", "hall said no"] && refused.service == "listr")

        let local = CommandError.local("could not encode the command")
        #expect(local.code == .local && local.exitCode == .appFailure)
        #expect(local.message == "could not encode the command")
    }

    @Test func descriptionAndLocalizedDescriptionAreTheMessage() {
        let error = CommandError.noReply(app: "kitchen", seconds: 0.5)
        #expect(error.description == "no reply from kitchen within the 0.5 s timeout")
        #expect(error.errorDescription == error.message)
        #expect(error.localizedDescription == error.message)
        #expect("\(error.code)" == "noReply")
    }

    @Test func aSwitchOverCodesKeepsADefaultAndCatchMatchesByCode() async {
        func kind(_ error: CommandError) -> String {
            switch error.code {
            case .noApp, .severalApps: "discovery"
            case .connectionLost, .noReply: "connection"
            default: "other"
            }
        }
        #expect(kind(.severalApps(service: "s", apps: [])) == "discovery")
        #expect(kind(.noReply(app: "a", seconds: 1)) == "connection")
        #expect(kind(.local("x")) == "other")

        func fail() throws { throw CommandError.connectionLost(app: "a") }
        var caught = false
        do { try fail() } catch let error as CommandError where error.code == .connectionLost { caught = true } catch {}
        #expect(caught)
    }

    @Test func theCauseIsKeptButNotCompared() {
        let underlying = ChirpError.notRunning
        let withCause = CommandError.local("the transceiver is not running", cause: underlying)
        let without = CommandError.local("the transceiver is not running")
        #expect(withCause.cause as? ChirpError == underlying)
        #expect(without.cause == nil)
        #expect(withCause == without)
        #expect(withCause != CommandError.local("something else"))
        #expect(
            CommandError.connectionLost(app: "kitchen on box", peer: kitchen)
                != CommandError.connectionLost(app: "kitchen on box"))
    }

    @Test func aToolCanMakeItsOwnWithACode() {
        let error = CommandError(code: .refused, message: "refused on service 's': no", service: "s", reasons: ["no"])
        #expect(error == .refused(service: "s", reasons: ["no"]))
        #expect(error.exitCode == .refused)
    }
}
