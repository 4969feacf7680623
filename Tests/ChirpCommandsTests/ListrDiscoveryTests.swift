import Foundation
import Testing

/// Finding the app: several apps, none, one that dies mid-command, several CLIs at once.
@Suite(.serialized, .timeLimit(.minutes(10))) struct ListrDiscoveryTests {
    @Test func allCollectsOneLabelledReplyPerApp() async throws {
        try await ListrFixture.run { fixture in
            let names = ["ash", "birch", "cedar"]
            _ = try await fixture.startApps(names)
            for name in names {
                let added = try await fixture.ctl(["item", "add", "task of \(name)", "--peer", name])
                #expect(added.status == 0, "\(added)")
            }

            let result = try await fixture.ctl(["item", "list", "--all"])
            #expect(result.status == 0, "\(result)")
            // One block per app: a "== NAME (ID) on HOST ==" label, then that app's reply.
            let blocks = result.stdout.components(separatedBy: "== ").dropFirst()
            #expect(blocks.count == 3, "\(result)")
            for name in names {
                let block = blocks.first { $0.hasPrefix("\(name) (") && $0.contains(") on ") }
                #expect(block?.contains("#1 [ ] task of \(name)") == true, "\(result)")
            }
        }
    }

    @Test func twoAppsAndNoPeerGiveExitCode4WithBothNames() async throws {
        try await ListrFixture.run { fixture in
            _ = try await fixture.startApps(["north", "south"])

            let result = try await fixture.ctl(["item", "list"])
            #expect(result.status == 4, "\(result)")
            #expect(result.stderr.contains("north"))
            #expect(result.stderr.contains("south"))
            #expect(result.stderr.contains("--peer"))

            let chosen = try await fixture.ctl(["item", "add", "for the south", "--peer", "south"])
            #expect(chosen.status == 0, "\(chosen)")
            #expect(chosen.lines == ["added #1 [ ] for the south"])
        }
    }

    @Test func noAppGivesExitCode3WithinTheTimeout() async throws {
        try await ListrFixture.run { fixture in
            let result = try await fixture.ctl(["item", "list"], timeout: 1.5)
            #expect(result.status == 3, "\(result)")
            #expect(result.stderr.contains("no app found on service '\(fixture.service)' within 1.5 s"), "\(result)")
            #expect(result.stdout.isEmpty)
            // It gives up at the timeout, not much later (generous bound: process start-up on a loaded machine).
            #expect(result.elapsed < .seconds(10), "\(result)")
        }
    }

    @Test func unknownPeerNameGivesExitCode3AndNamesTheAppsSeen() async throws {
        try await ListrFixture.run { fixture in
            _ = try await fixture.startApp("present")
            let result = try await fixture.ctl(["item", "list", "--peer", "absent"], timeout: 2)
            #expect(result.status == 3, "\(result)")
            #expect(result.stderr.contains("no app named 'absent'"))
            #expect(result.stderr.contains("present"))
        }
    }

    @Test func appKilledMidCommandGivesExitCode5Quickly() async throws {
        try await ListrFixture.run { fixture in
            let app = try await fixture.startApp("doomed", extra: ["--enable-debug-commands"])

            // The app holds the command for 60 s and the CLI would wait as long: killing the app must end it at once.
            let launched = try await fixture.launchCtl(["debug", "hold", "60"], timeout: 60)
            let holding = await app.waitForError(containing: "holding for")
            try #require(holding, "the app never received the command: \(app.standardError)")
            let killedAt = ContinuousClock.now
            app.signal(SIGKILL)
            let result = try await fixture.finish(launched)
            let afterKill = ContinuousClock.now - killedAt
            #expect(result.status == 5, "\(result)")
            #expect(result.stderr.contains("lost the connection to doomed"), "\(result)")
            // "Quickly": far below the 60 s timeout (the bound is generous; the drop is seen at once on loopback).
            #expect(afterKill < .seconds(20), "exited \(afterKill) after the kill")
        }
    }

    @Test func twoConcurrentCLIsEachGetTheirOwnReply() async throws {
        try await ListrFixture.run { fixture in
            _ = try await fixture.startApp("shared")

            let first = try await fixture.launchCtl(["item", "add", "first task"])
            let second = try await fixture.launchCtl(["item", "add", "second task"])
            let results = [try await fixture.finish(first), try await fixture.finish(second)]
            for (result, own, other) in [
                (results[0], "first task", "second task"), (results[1], "second task", "first task")
            ] {
                #expect(result.status == 0, "\(result)")
                #expect(result.lines.count == 1, "\(result)")
                #expect(result.stdout.contains(own), "\(result)")
                #expect(!result.stdout.contains(other), "\(result)")
            }
            let list = try await fixture.ctl(["item", "list"])
            #expect(list.lines.count == 2, "\(list)")
        }
    }
}
