import Foundation
import Testing

/// Two listr apps with the same name: listrctl tells them apart by id, and the second one is warned.
@Suite(.serialized, .timeLimit(.minutes(5))) struct ListrSameNameTests {
    /// The "kitchen (ID) on HOST" labels in `text`, each ID being 8 hex characters.
    static func ids(in text: String) -> [String] {
        var ids: [String] = []
        var rest = Substring(text)
        while let range = rest.range(of: "kitchen (") {
            let id = rest[range.upperBound...].prefix(8)
            if id.count == 8, id.allSatisfy(\.isHexDigit), !ids.contains(String(id)) { ids.append(String(id)) }
            rest = rest[range.upperBound...]
        }
        return ids
    }

    /// The ids of the kitchens an app logged a connection to ("peer=kitchen (ID) ... connected").
    static func connectedKitchens(in log: String) -> Set<String> {
        var ids: Set<String> = []
        for line in log.split(separator: "\n") where line.contains("connected") && !line.contains("disconnected") {
            guard let range = line.range(of: "peer=kitchen (") else { continue }
            ids.insert(String(line[range.upperBound...].prefix(8)))
        }
        return ids
    }

    @Test func twoAppsOfOneNameAreListedWithTheirIdsAndChosenByIdPrefix() async throws {
        try await ListrFixture.run { fixture in
            _ = try await fixture.startApp("kitchen", store: fixture.path("first.json"))
            _ = try await fixture.startApp("kitchen", store: fixture.path("second.json"))

            // No --peer: both candidates, each with its id and host.
            let several = try await fixture.ctl(["item", "list"])
            #expect(several.status == 4, "\(several)")
            let ids = Self.ids(in: several.stderr)
            try #require(ids.count == 2, "two ids in: \(several)")
            #expect(several.stderr.contains(") on "), "\(several)")

            // --peer NAME matches both: ambiguous, not a silent pick.
            let ambiguous = try await fixture.ctl(["item", "list", "--peer", "kitchen"])
            #expect(ambiguous.status == 4, "\(ambiguous)")
            #expect(ambiguous.stderr.contains("--peer 'kitchen' matches 2 apps"), "\(ambiguous)")
            #expect(Self.ids(in: ambiguous.stderr).sorted() == ids.sorted(), "\(ambiguous)")

            // --peer with the start of an id (4 characters, any case): that app and no other.
            let first = String(ids[0].prefix(4)).lowercased()
            let second = String(ids[1].prefix(6))
            let added = try await fixture.ctl(["item", "add", "for the first", "--peer", first])
            #expect(added.status == 0, "\(added)")
            #expect(added.lines == ["added #1 [ ] for the first"], "\(added)")
            let listFirst = try await fixture.ctl(["item", "list", "--peer", first])
            #expect(listFirst.lines == ["#1 [ ] for the first"], "\(listFirst)")
            let listSecond = try await fixture.ctl(["item", "list", "--peer", second])
            #expect(listSecond.status == 0, "\(listSecond)")
            #expect(listSecond.lines == ["no items"], "\(listSecond)")

            // --all: one header per app, each with its id, so the replies can be told apart.
            let all = try await fixture.ctl(["item", "list", "--all"])
            #expect(all.status == 0, "\(all)")
            let headers = all.lines.filter { $0.hasPrefix("== ") }
            #expect(headers.count == 2 && Set(headers).count == 2, "\(all)")
            for id in ids { #expect(headers.contains { $0.hasPrefix("== kitchen (\(id)) on ") }, "\(all)") }
        }
    }

    @Test func aSecondAppWithANameInUseIsWarned() async throws {
        try await ListrFixture.run { fixture in
            let other = try await fixture.startApp("pantry", store: fixture.path("pantry.json"))
            let first = try await fixture.startApp("kitchen", store: fixture.path("first.json"))
            let second = try await fixture.launchApp("kitchen", store: fixture.path("second.json"))
            #expect(
                await second.waitForError(containing: "listr: warning: another app is named 'kitchen'"),
                "\(second.transcript)")
            #expect(second.standardError.contains("--peer ID"), "\(second.transcript)")
            // The one already running hears of the newcomer too.
            #expect(await first.waitForError(containing: "listr: warning: another app is named 'kitchen'"))
            // An app of another name warns of nothing, once it has met both kitchens (its log names the peers it
            // connects to: the positive control that it saw them).
            let metBoth = await eventually(timeout: .seconds(20)) {
                Self.connectedKitchens(in: other.standardError).count == 2
            }
            #expect(metBoth, "\(other.transcript)")
            #expect(!other.standardError.contains("warning: another app"), "\(other.transcript)")
        }
    }
}
