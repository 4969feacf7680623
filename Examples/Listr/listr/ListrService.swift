import Chirp
import ChirpCommands
import Foundation
import ListrCommands
import Logging

/// Registers listr's command handlers: each logs what it did and answers with a message, the store's bytes, or a
/// failure (a thrown error). With device identities, a command needs a permission: reading ones `read`, replacing
/// the whole store `admin`, the others `write`.
enum ListrService {
    static func register(on receiver: CommandReceiver, store: TodoStore, logger: Logger, debugCommands: Bool) throws {
        try receiver.handle(ListItems.self, requiring: .read) { _, _ in
            let items = await store.items
            return .text(items.isEmpty ? "no items" : items.map(\.line).joined(separator: "\n"))
        }
        try receiver.handle(AddItem.self) { command, sender in
            let item = try await store.add(title: command.title)
            logger.info("added #\(item.id) \"\(item.title)\"", metadata: ["from": "\(sender.name)"])
            return .text("added \(item.line)")
        }
        try receiver.handle(CompleteItem.self) { command, sender in
            let item = try await store.complete(id: command.id)
            logger.info("done #\(item.id)", metadata: ["from": "\(sender.name)"])
            return .text("done \(item.line)")
        }
        try receiver.handle(RemoveItem.self) { command, sender in
            let item = try await store.remove(id: command.id)
            logger.info("removed #\(item.id)", metadata: ["from": "\(sender.name)"])
            return .text("removed \(item.line)")
        }
        try receiver.handle(DumpStore.self, requiring: .read) { _, sender in
            let bytes = await store.dump()
            logger.info("dumped the store (\(bytes.count) bytes)", metadata: ["from": "\(sender.name)"])
            return .data(bytes)
        }
        try receiver.handle(ReplaceStore.self, requiring: .admin) { command, sender in
            let file: StoreFile
            do {
                file = try await store.replace(with: command.contents)
            } catch {
                logger.warning("refused a store replacement: \(error)", metadata: ["from": "\(sender.name)"])
                throw error
            }
            logger.info("replaced the store (\(file.items.count) items)", metadata: ["from": "\(sender.name)"])
            return .text("replaced the store: \(file.items.count) items")
        }
        if debugCommands {
            try receiver.handle(HoldCommand.self) { command, sender in
                let seconds = min(max(command.seconds, 0), 300)
                logger.info("holding for \(seconds) s", metadata: ["from": "\(sender.name)"])
                try await Task.sleep(for: .milliseconds(Int64(seconds * 1000)))
                return .text("held for \(seconds) s")
            }
        }
    }
}
