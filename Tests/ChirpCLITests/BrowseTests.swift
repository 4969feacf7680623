import Chirp
import Foundation
import Testing

extension ChirpCLITests {
    @Suite struct Browse {
        @Test func onceShowsPeersWithTheirMetadata() async throws {
            let type = uniqueServiceType()
            try await withPeer(type, name: "browse-me", metadata: ["room": "lobby", "role": "tester"]) { peer in
                let chat = try await startChat(type, name: "alice")
                try await waitUntilAdvertised(type, name: "alice")

                let (status, browse) = try await runChirp([
                    "browse", type, "--once", "--interface", "lo", "--timeout", "2"
                ])
                await chat.stop()
                #expect(status == 0, "\(browse.transcript)")
                let lines = browse.lines
                #expect(lines.first?.hasPrefix("NAME") == true, "\(browse.transcript)")
                let row = try #require(lines.first { $0.hasPrefix("browse-me ") }, "\(browse.transcript)")
                #expect(row.contains("127.0.0.1:\(peer.port ?? -1)"))
                #expect(row.contains(String(peer.configuration.peerID.prefix(8))))
                #expect(row.contains("role=tester room=lobby"))
                #expect(lines.contains { $0.hasPrefix("alice ") }, "\(browse.transcript)")
                #expect(browse.standardError.isEmpty, "piped output must stay clean: \(browse.standardError)")
            }
        }

        @Test func liveJSONSeesAPeerArriveAndLeave() async throws {
            let type = uniqueServiceType()
            let browse = try await startChirp(["browse", type, "--json", "--interface", "lo"])
            try await withPeer(type, name: "comes-and-goes", metadata: ["color": "blue"]) { peer in

                let foundLine = try await browse.waitForLine(containing: "\"found\"")
                let found = try jsonObject(foundLine)
                #expect(found["name"] as? String == "comes-and-goes")
                #expect(found["peerID"] as? String == peer.configuration.peerID)
                #expect(found["type"] as? String == "_\(type)._tcp")
                #expect(found["metadata"] as? [String: String] == ["color": "blue"])
                #expect(found["port"] as? Int == peer.port)
                #expect((found["addresses"] as? [String])?.contains("127.0.0.1") == true)

                await peer.shutdown()
                let lostLine = try await browse.waitForLine(containing: "\"lost\"")
                #expect(try jsonObject(lostLine)["instance"] as? String == found["instance"] as? String)

                browse.signal(SIGINT)
                #expect(try await browse.waitForExit() == 0, "\(browse.transcript)")
            }
        }

        @Test func withoutATypeEnumeratesServiceTypes() async throws {
            let type = uniqueServiceType()
            try await withPeer(type, name: "enumerated") { _ in
                let (status, browse) = try await runChirp([
                    "browse", "--once", "--json", "--interface", "lo", "--timeout", "2"
                ])
                #expect(status == 0, "\(browse.transcript)")
                let objects = try browse.lines.map(jsonObject)
                let ours = objects.first { $0["type"] as? String == "_\(type)._tcp" }
                #expect(ours?["name"] as? String == "enumerated", "\(browse.transcript)")
            }
        }
    }
}
