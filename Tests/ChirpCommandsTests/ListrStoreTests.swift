import Chirp
import ChirpCommands
import Foundation
import ListrCommands
import Logging
import Testing

/// `store dump` and `store replace`, end to end.
@Suite(.serialized, .timeLimit(.minutes(10))) struct ListrStoreTests {
    @Test func dumpThenReplaceRoundTrip() async throws {
        try await ListrFixture.run { fixture in
            _ = try await fixture.startApp("alpha")
            _ = try await fixture.ctl(["item", "add", "one"])
            _ = try await fixture.ctl(["item", "add", "two"])

            // Dump: the file equals the app's store, and no temporary file is left next to it.
            let dump = fixture.path("dump.json")
            var result = try await fixture.ctl(["store", "dump", dump])
            #expect(result.status == 0, "\(result)")
            #expect(result.stdout.contains("saved the store of alpha"))
            let dumped = try StoreFile.decode(Data(contentsOf: URL(fileURLWithPath: dump)))
            #expect(dumped == (try StoreFile.load(from: fixture.path("alpha.json"))))
            #expect(dumped.items.map(\.title) == ["one", "two"])
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: fixture.directory.path).filter {
                $0.contains(".tmp-")
            }
            #expect(leftovers.isEmpty)

            // Replace with an edited copy: the app serves and saves the new items.
            var edited = dumped
            edited.items[0].done = true
            edited.items.append(TodoItem(id: 7, title: "seven"))
            edited.nextID = 8
            let replacement = fixture.path("replacement.json")
            try edited.encoded().write(to: URL(fileURLWithPath: replacement))
            result = try await fixture.ctl(["store", "replace", replacement])
            #expect(result.status == 0, "\(result)")
            #expect(result.lines == ["replaced the store: 3 items"])
            result = try await fixture.ctl(["item", "list"])
            #expect(result.lines == ["#1 [x] one", "#2 [ ] two", "#7 [ ] seven"], "\(result)")
            #expect(try StoreFile.load(from: fixture.path("alpha.json")) == edited)

            // The next id continues after the replaced store's.
            result = try await fixture.ctl(["item", "add", "eight"])
            #expect(result.lines == ["added #8 [ ] eight"], "\(result)")
        }
    }

    @Test func dumpToAPipeWhoseReaderLeavesEndsQuietly() async throws {
        try await ListrFixture.run { fixture in
            // A store of about 400 KiB: more than a pipe holds, so the reader is gone while listrctl still writes.
            let items = (1...4000).map { TodoItem(id: $0, title: "item \($0) " + String(repeating: "x", count: 80)) }
            try StoreFile(nextID: 4001, items: items).encoded().write(
                to: URL(fileURLWithPath: fixture.path("alpha.json")))
            _ = try await fixture.startApp("alpha")
            // `listrctl store dump - | head -c 1`: listrctl's status and standard error, with the reader gone.
            let command =
                "\(binaryPath("listrctl")) store dump - --service \(fixture.service) --loopback --timeout 15 "
                + "2>\(fixture.path("stderr.txt")) | head -c 1 >/dev/null; echo ${PIPESTATUS[0]}"
            let shell = try await TestProcess("/bin/bash", ["-c", command], input: .closed)
            #expect(try await shell.waitForExit() == 0)
            #expect(
                shell.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines) == "0",
                "listrctl's exit status: \(shell.standardOutput)")
            let errors = try String(contentsOfFile: fixture.path("stderr.txt"), encoding: .utf8)
            #expect(errors.isEmpty, "quietly: \(errors)")
            // Control: with a reader that reads everything, the same dump is the whole store.
            let whole = try await fixture.ctl(["store", "dump", "-"])
            #expect(
                whole.status == 0 && whole.stdout.utf8.count > 300_000,
                "\(whole.status) \(whole.stdout.utf8.count) bytes")
        }
    }

    @Test func replaceWithCorruptFileLeavesTheStoreIntact() async throws {
        try await ListrFixture.run { fixture in
            _ = try await fixture.startApp("alpha")
            _ = try await fixture.ctl(["item", "add", "keep me"])
            let storePath = fixture.path("alpha.json")
            let before = try Data(contentsOf: URL(fileURLWithPath: storePath))

            // listrctl checks the file first: a usage error, nothing sent.
            let corrupt = fixture.path("corrupt.json")
            try Data("{\"version\": 1, \"nextID\": 2, \"items\": [{\"id\": 1, \"title\": ".utf8).write(
                to: URL(fileURLWithPath: corrupt))
            var result = try await fixture.ctl(["store", "replace", corrupt])
            #expect(result.status == 64, "\(result)")
            #expect(result.stderr.contains("not a valid Listr store"))

            let duplicateIDs = fixture.path("duplicates.json")
            try Data(
                #"{"version": 1, "nextID": 3, "items": [{"id": 1, "title": "a", "done": false}, {"id": 1, "title": "b", "done": false}]}"#
                    .utf8
            )
            .write(to: URL(fileURLWithPath: duplicateIDs))
            result = try await fixture.ctl(["store", "replace", duplicateIDs])
            #expect(result.status == 64, "\(result)")
            #expect(result.stderr.contains("appears twice"))

            // The app checks again, whoever sends: a failure reply, and the store is untouched.
            var configuration = Configuration(serviceType: fixture.service)
            configuration.interface = .loopback
            configuration.logger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
            let transmitter = CommandTransmitter(configuration: configuration, timeout: .seconds(15))
            let reply = try await transmitter.send(ReplaceStore(contents: Data("not json at all".utf8)))
            guard case .failure(let message) = reply.response else {
                Issue.record("expected a failure, got \(reply.response)")
                return
            }
            #expect(message.contains("not a valid Listr store"))

            #expect(try Data(contentsOf: URL(fileURLWithPath: storePath)) == before)
            result = try await fixture.ctl(["item", "list"])
            #expect(result.lines == ["#1 [ ] keep me"], "\(result)")
        }
    }
}
