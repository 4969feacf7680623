import ChirpCommands
import Foundation
import ListrCommands

/// The to-do list and its file. Every change is written to the file (atomically) before it is answered; a change
/// that cannot be saved is undone and reported.
actor TodoStore {
    let path: String
    private var file: StoreFile

    /// Loads the store at `path`; a missing file is an empty list (created at the first change).
    /// - Throws: ``StoreFileError`` for a file that is corrupt or cannot be read. Nothing is written then.
    init(path: String) throws(StoreFileError) {
        self.path = path
        self.file = try StoreFile.load(from: path)
    }

    var items: [TodoItem] { file.items }

    func add(title: String) throws -> TodoItem {
        if let problem = StoreFile.problem(withTitle: title) { throw ListrError.badTitle(problem) }
        guard file.items.count < StoreFile.maximumItems else { throw ListrError.full }
        var next = file
        let item = TodoItem(id: next.nextID, title: title)
        next.items.append(item)
        let (following, overflowed) = next.nextID.addingReportingOverflow(1)
        guard !overflowed, following <= StoreFile.maximumNextID else { throw ListrError.noIDLeft }
        next.nextID = following
        try save(next)
        return item
    }

    func complete(id: Int) throws -> TodoItem {
        var next = file
        guard let index = next.items.firstIndex(where: { $0.id == id }) else { throw ListrError.noSuchItem(id) }
        next.items[index].done = true
        try save(next)
        return next.items[index]
    }

    func remove(id: Int) throws -> TodoItem {
        var next = file
        guard let index = next.items.firstIndex(where: { $0.id == id }) else { throw ListrError.noSuchItem(id) }
        let removed = next.items.remove(at: index)
        try save(next)
        return removed
    }

    /// The store file's bytes, as they are (or would be) on disk.
    func dump() -> Data { file.encoded() }

    /// Replaces the whole store with `bytes`, after checking them; invalid bytes change nothing.
    func replace(with bytes: Data) throws -> StoreFile {
        let next = try StoreFile.decode(bytes)
        try save(next)
        return next
    }

    private func save(_ next: StoreFile) throws {
        try AtomicFile.write(next.encoded(), to: path)
        file = next
    }
}

/// Failures listr reports to listrctl.
enum ListrError: Error, CustomStringConvertible {
    case noSuchItem(Int)
    case badTitle(String)
    case full
    case noIDLeft

    var description: String {
        switch self {
        case .noSuchItem(let id): return "no item #\(id)"
        case .badTitle(let problem): return problem
        case .full: return "the list is full (\(StoreFile.maximumItems) items)"
        case .noIDLeft:
            return
                "no item id is left (ids go up to \(StoreFile.maximumNextID)); renumber with `listrctl store replace`"
        }
    }
}
