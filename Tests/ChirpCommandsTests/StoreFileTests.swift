import ChirpCommands
import Foundation
import ListrCommands
import Testing

@Suite(.timeLimit(.minutes(5))) struct StoreFileTests {
    let directory: URL = {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "storefile-\(UUID().uuidString.prefix(8))")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }()

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    @Test func missingFileIsAnEmptyStore() throws {
        #expect(try StoreFile.load(from: path("missing.json")) == .empty)
    }

    @Test func savedStoreLoadsBack() throws {
        let store = StoreFile(nextID: 3, items: [TodoItem(id: 1, title: "a"), TodoItem(id: 2, title: "b", done: true)])
        try AtomicFile.write(store.encoded(), to: path("store.json"))
        #expect(try StoreFile.load(from: path("store.json")) == store)
    }

    @Test func corruptFileIsRefusedWithItsPathAndReason() throws {
        try Data("[1, 2".utf8).write(to: URL(fileURLWithPath: path("bad.json")))
        #expect(throws: StoreFileError.corrupt(path: path("bad.json"), reason: "not valid JSON")) {
            try StoreFile.load(from: path("bad.json"))
        }
    }

    @Test(arguments: [
        (#"{"version": 2, "nextID": 1, "items": []}"#, "version 2 is not supported"),
        (#"{"version": 1, "items": []}"#, "missing field 'nextID'"),
        (
            #"{"version": 1, "nextID": 3, "items": [{"id": 1, "title": "a", "done": false}, {"id": 1, "title": "b", "done": false}]}"#,
            "appears twice"
        ),
        (
            #"{"version": 1, "nextID": 2, "items": [{"id": 5, "title": "a", "done": false}]}"#,
            "nextID 2 is not above item id 5"
        ),
        (#"{"version": 1, "nextID": 2, "items": [{"id": 1, "title": "", "done": false}]}"#, "empty title"),
        // An id that the next item would overflow (the store file, or `store replace` from a peer).
        (#"{"version": 1, "nextID": 9223372036854775807, "items": []}"#, "is over the largest id, 4611686018427387904"),
        (
            #"{"version": 1, "nextID": 2, "items": [{"id": 1, "title": 7, "done": false}]}"#,
            "wrong type at items[0].title: expected a string"
        )
    ])
    func invalidStoresSayWhatIsWrong(json: String, expected: String) {
        do {
            _ = try StoreFile.decode(Data(json.utf8))
            Issue.record("accepted \(json)")
        } catch {
            #expect(error.description.contains(expected), "\(error)")
        }
    }

    @Test func atomicWriteReplacesWholeFilesAndLeavesNoTemporaryFile() throws {
        let target = path("out.bin")
        try AtomicFile.write(Data("first version, rather long".utf8), to: target)
        chmod(target, 0o600)
        try AtomicFile.write(Data("second".utf8), to: target)
        #expect(try Data(contentsOf: URL(fileURLWithPath: target)) == Data("second".utf8))
        let attributes = try FileManager.default.attributesOfItem(atPath: target)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(names == ["out.bin"])
    }

    @Test func atomicWriteFailureLeavesTheTargetAlone() throws {
        #expect(throws: AtomicFileError.self) { try AtomicFile.write(Data("x".utf8), to: path("no/such/dir/file")) }
        try FileManager.default.createDirectory(atPath: path("adir"), withIntermediateDirectories: true)
        #expect(throws: AtomicFileError(path: path("adir"), reason: "it is a directory")) {
            try AtomicFile.write(Data("x".utf8), to: path("adir"))
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["adir"])
    }
}
