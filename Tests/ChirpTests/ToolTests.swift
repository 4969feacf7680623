import Foundation
import NIOCore
import Testing

@testable import Chirp
@testable import ChirpWire

struct ToolNote: Codable, Sendable, ChirpMessage {
    static let chirpTypeName = "tests.tool-note"
    var text: String
}

extension LiveTests {
    /// A transceiver that does not advertise itself (a command-line tool) is a `.tool` peer: apps answer it and
    /// receive its messages, but leave it out of their peers, their peer events and `.all`, unless they ask.
    @Suite(.timeLimit(.minutes(2))) struct ToolTests {
        @Test func appsLeaveToolsOutOfTheirPeersEventsAndBroadcastsButAnswerThem() async throws {
            let type = uniqueServiceType()
            let app = Transceiver(configuration: testConfiguration("app", serviceType: type))
            var watcherConfiguration = testConfiguration("watcher", serviceType: type)
            watcherConfiguration.includesTools = true  // the positive control: it asks for tools
            let watcher = Transceiver(configuration: watcherConfiguration)
            var toolConfiguration = testConfiguration("tool", serviceType: type)
            toolConfiguration.advertises = false
            let tool = Transceiver(configuration: toolConfiguration)
            #expect(tool.localPeer.role == .tool && app.localPeer.role == .app)

            let appEvents = EventRecorder(app)
            let watcherEvents = EventRecorder(watcher)
            let listsSeenByApp = Collected<[String]>()
            app.availablePeersDidChange = { peers in listsSeenByApp.append(peers.map(\.name)) }
            let atApp = Collected<String>()
            let toolAtApp = Collected<Peer>()  // the tool as the app knows it: the sender of its messages
            try app.receive(ToolNote.self) { note, sender in
                atApp.append("\(note.text) from \(sender.name) (\(sender.role))")
                toolAtApp.append(sender)
                if note.text == "question" { try app.send(ToolNote(text: "answer"), to: sender) }
            }
            let atTool = Collected<String>()
            try tool.receive(ToolNote.self) { note, _ in atTool.append(note.text) }
            try app.respond(to: Echo.self) { echo, sender in Echo(text: "\(echo.text) to a \(sender.role)") }

            try await withTeardown {
                try await app.start()
                try await watcher.start()
                _ = try await app.waitForConnectedPeers(1)  // the watcher
                try await tool.start()
                let peers = try await tool.waitForConnectedPeers(2)  // a tool sees the apps
                #expect(Set(peers.map(\.name)) == ["app", "watcher"] && peers.allSatisfy { $0.role == .app })
                let appPeer = try #require(peers.first { $0.name == "app" })
                try await watcherEvents.waitFor("the tool connected") { event in
                    if case .peerConnected(let peer) = event {
                        peer.name == "tool" && peer.role == .tool
                    } else {
                        false
                    }
                }

                // The app answers the tool and receives its messages; its reply to the sender reaches the tool.
                #expect(try await tool.request(Echo(text: "hi"), to: appPeer, as: Echo.self).text == "hi to a tool")
                try await tool.send(ToolNote(text: "question"), to: appPeer)
                try await atTool.waitForCount(1)
                #expect(atApp.values == ["question from tool (tool)"])
                #expect(atTool.values == ["answer"])

                // `.all` leaves the tool out: a note sent to all, then one to the tool itself; the tool gets only the
                // second (a connection delivers in order), the watcher the first.
                let atWatcher = Collected<String>()
                try watcher.receive(ToolNote.self) { note, _ in atWatcher.append(note.text) }
                try await app.send(ToolNote(text: "to all"), to: .all)
                try await atWatcher.waitForCount(1)
                try await app.send(ToolNote(text: "to the tool"), to: try #require(toolAtApp.values.first))
                try await atTool.waitForCount(2)
                #expect(atTool.values == ["answer", "to the tool"])
                #expect(atWatcher.values == ["to all"])

                #expect(app.availablePeers.map(\.name) == ["watcher"])
                #expect(app.connectedPeers.map(\.name) == ["watcher"])
                #expect(Set(watcher.connectedPeers.map(\.name)) == ["app", "tool"])
            } teardown: {
                await tool.shutdown()
                await app.shutdown()
                await watcher.shutdown()
            }
            // Every event up to `stopped` is recorded: the app was never told of the tool, the watcher was.
            try await appEvents.waitFor("the app's stopped event") { if case .stopped = $0 { true } else { false } }
            try await watcherEvents.waitFor("the watcher's stopped event") {
                if case .stopped = $0 { true } else { false }
            }
            #expect(!appEvents.events.contains { Self.mentionsTool($0) }, "\(appEvents.events)")
            #expect(listsSeenByApp.values.allSatisfy { !$0.contains("tool") }, "\(listsSeenByApp.values)")
            #expect(watcherEvents.connectedNames().contains("tool"))
            #expect(watcherEvents.disconnectedNames().contains("tool"))
        }

        /// Whether `event` is a peer event about the peer named `tool`.
        static func mentionsTool(_ event: TransceiverEvent) -> Bool {
            switch event {
            case .peerAdded(let peer), .peerRemoved(let peer), .peerConnected(let peer), .peerDisconnected(let peer):
                peer.name == "tool"
            case .availablePeersChanged(let peers): peers.contains { $0.name == "tool" }
            default: false
            }
        }

        /// The role travels in the hello (`"role": "tool"`, left out for an app); an older command-line tool that
        /// says `chirp-role: cli` in its metadata is a tool too.
        @Test func theRoleTravelsInTheHello() throws {
            let app = Hello(peerID: "a", name: "a", service: "s", metadata: [:])
            let tool = Hello(peerID: "t", name: "t", service: "s", metadata: [:], role: Hello.toolRole)
            let appJSON = String(
                decoding: Data(try app.frame(allocator: .init()).readableBytesView).dropFirst(5), as: UTF8.self)
            let toolJSON = String(
                decoding: Data(try tool.frame(allocator: .init()).readableBytesView).dropFirst(5), as: UTF8.self)
            #expect(!appJSON.contains("role"))
            #expect(toolJSON.contains(#""role":"tool""#))
            #expect(try Hello.parse(ByteBuffer(string: toolJSON)).peerRole == .tool)
            #expect(try Hello.parse(ByteBuffer(string: appJSON)).peerRole == .app)
            let oldCLI = #"{"protocol":1,"peerID":"c","name":"c","service":"s","metadata":{"chirp-role":"cli"}}"#
            #expect(try Hello.parse(ByteBuffer(string: oldCLI)).peerRole == .tool)
            let future = #"{"protocol":1,"peerID":"f","name":"f","service":"s","metadata":{},"role":"bridge"}"#
            #expect(try Hello.parse(ByteBuffer(string: future)).peerRole == .app)
        }
    }
}
