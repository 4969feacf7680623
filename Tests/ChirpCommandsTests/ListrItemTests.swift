import ChirpCommands
import Foundation
import ListrCommands
import Testing

/// listr and listrctl as processes, against the real avahi-daemon: what a user types, what a user sees.
@Suite(.serialized, .timeLimit(.minutes(10))) struct ListrItemTests {
    @Test func addListDoneRemoveRoundTrip() async throws {
        try await ListrFixture.run { fixture in
            _ = try await fixture.startApp("alpha")

            var result = try await fixture.ctl(["item", "add", "buy", "milk"])
            #expect(result.status == 0, "\(result)")
            #expect(result.lines == ["added #1 [ ] buy milk"])
            result = try await fixture.ctl(["item", "add", "call mom"])
            #expect(result.lines == ["added #2 [ ] call mom"], "\(result)")

            result = try await fixture.ctl(["item", "list"])
            #expect(result.status == 0, "\(result)")
            #expect(result.lines == ["#1 [ ] buy milk", "#2 [ ] call mom"])

            result = try await fixture.ctl(["item", "done", "1"])
            #expect(result.lines == ["done #1 [x] buy milk"], "\(result)")
            result = try await fixture.ctl(["item", "remove", "2"])
            #expect(result.lines == ["removed #2 [ ] call mom"], "\(result)")
            result = try await fixture.ctl(["item", "list"])
            #expect(result.lines == ["#1 [x] buy milk"], "\(result)")

            // The app reports a failure: exit code 1, the message on standard error, nothing on standard output.
            result = try await fixture.ctl(["item", "done", "7"])
            #expect(result.status == 1, "\(result)")
            #expect(result.stderr.contains("no item #7"))
            #expect(result.stdout.isEmpty)

            // Every change reached the file.
            let saved = try StoreFile.load(from: fixture.path("alpha.json"))
            #expect(saved.items == [TodoItem(id: 1, title: "buy milk", done: true)])
            #expect(saved.nextID == 3)
        }
    }

    @Test func missingStoreIsAnEmptyListCreatedAtTheFirstChange() async throws {
        try await ListrFixture.run { fixture in
            let store = fixture.path("new/store.json")
            try FileManager.default.createDirectory(atPath: fixture.path("new"), withIntermediateDirectories: true)
            _ = try await fixture.startApp("fresh", store: store)

            let result = try await fixture.ctl(["item", "list"])
            #expect(result.status == 0, "\(result)")
            #expect(result.lines == ["no items"])
            #expect(!FileManager.default.fileExists(atPath: store))

            _ = try await fixture.ctl(["item", "add", "first"])
            #expect(try StoreFile.load(from: store).items.map(\.title) == ["first"])
        }
    }

    @Test func corruptStoreIsRefusedAtStartAndNotOverwritten() async throws {
        try await ListrFixture.run { fixture in
            let store = fixture.path("broken.json")
            let garbage = Data("{\"version\": 1, \"items\": [oops".utf8)
            try garbage.write(to: URL(fileURLWithPath: store))

            let app = try await fixture.launchApp("broken", store: store)
            let status = try await app.waitForExit()
            #expect(status == 1)
            #expect(app.standardError.contains("is not a valid Listr store"), "\(app.standardError)")
            #expect(app.standardError.contains(store))
            #expect(try Data(contentsOf: URL(fileURLWithPath: store)) == garbage)
        }
    }
}
