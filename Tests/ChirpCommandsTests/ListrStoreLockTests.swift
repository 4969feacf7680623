import Foundation
import ListrCommands
import Testing

/// One store, one listr: the store is locked while an app runs, and what is wrong with a store stops listr at start.
@Suite(.serialized, .timeLimit(.minutes(5))) struct ListrStoreLockTests {
    @Test func aSecondAppOnTheSameStoreRefusesToStartAndNothingIsLost() async throws {
        try await ListrFixture.run { fixture in
            let store = fixture.path("shared.json")
            let first = try await fixture.startApp("first", store: store)
            let added = try await fixture.ctl(["item", "add", "kept", "--peer", "first"])
            #expect(added.status == 0, "\(added)")

            let second = try await fixture.launchApp("second", store: store)
            #expect(try await second.waitForExit() == 1, "\(second.transcript)")
            #expect(
                second.standardError.hasPrefix(
                    "listr: error: \(store) is in use by another listr (process \(first.pid))"))
            #expect(!second.standardError.contains("ready:"), "\(second.transcript)")

            // The first app still serves, and its changes all reach the file.
            let more = try await fixture.ctl(["item", "add", "also kept"])
            #expect(more.status == 0, "\(more)")
            #expect(try StoreFile.load(from: store).items.map(\.title) == ["kept", "also kept"])

            // Once the first has stopped, the lock is free: another app takes the store, items included.
            await first.stop()
            _ = try await fixture.startApp("third", store: store)
            let list = try await fixture.ctl(["item", "list", "--peer", "third"])
            #expect(list.lines == ["#1 [ ] kept", "#2 [ ] also kept"], "\(list)")
        }
    }

    @Test func aStoreInADirectoryThatDoesNotExistIsAUsageErrorAtStart() async throws {
        try await ListrFixture.run { fixture in
            let app = try await fixture.launchApp("lost", store: fixture.path("no/such/dir/t.json"))
            #expect(try await app.waitForExit() == 64, "\(app.transcript)")
            #expect(
                app.standardError.hasPrefix(
                    "listr: error: --store \(fixture.path("no/such/dir/t.json")): the directory \(fixture.path("no/such/dir")) does not exist"
                ),
                "\(app.transcript)")
            #expect(!app.standardError.contains("ready:"), "\(app.transcript)")
        }
    }

    @Test func aStoreThatIsNotValidIsAnErrorThatStopsListrAndIsNotOverwritten() async throws {
        try await ListrFixture.run { fixture in
            let store = fixture.path("broken.json")
            let garbage = Data(#"{"version": 1, "items": []}"#.utf8)
            try garbage.write(to: URL(fileURLWithPath: store))

            let app = try await fixture.launchApp("broken", store: store)
            #expect(try await app.waitForExit() == 1, "\(app.transcript)")
            #expect(
                app.standardError.hasPrefix(
                    "listr: error: \(store) is not a valid Listr store (missing field 'nextID'); fix it or move it away"
                ),
                "\(app.transcript)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: store)) == garbage)
        }
    }
}
