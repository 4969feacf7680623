// chirp-load: the processes of the load runs (scripts/load/run.sh, `make load`, `make load-many`; see
// Docs/Reliability.md, "Load").
//
//     chirp-load receiver --service T --name recv-1            # counts and checks one sender's ticks
//     chirp-load sender   --service T --receivers 16 --seconds 60
//     chirp-load mesh     --service T --expect 63 [--count 1]  # peers in one service, status every second
//
// Uses the library's public API only.
import Foundation
import Logging

@main
enum ChirpLoad {
    static func main() async {
        setenv("AVAHI_COMPAT_NOWARN", "1", 1)
        LoggingSystem.bootstrap(StreamLogHandler.standardError)
        let stop = StopSignal()
        do {
            let options = try Options(Array(CommandLine.arguments.dropFirst()))
            let ok: Bool
            switch options.role {
            case "sender": ok = try await SenderRole(options: options).run(stop: stop)
            case "receiver": ok = try await ReceiverRole(options: options).run(stop: stop)
            case "mesh": ok = try await MeshRole(options: options).run(stop: stop)
            case "help", "-h", "--help":
                print(Options.usage)
                ok = true
            default: throw LoadError("unknown role '\(options.role)'\n\(Options.usage)")
            }
            exit(ok ? 0 : 1)
        } catch {
            say("chirp-load: \(error)")
            exit(2)
        }
    }
}
