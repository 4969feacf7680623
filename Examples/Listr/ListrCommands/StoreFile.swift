import ChirpCommands
import Foundation

/// One to-do item.
public struct TodoItem: Codable, Sendable, Equatable {
    /// Its id, unique in the store, never reused.
    public var id: Int
    /// What to do.
    public var title: String
    /// Whether it is done.
    public var done: Bool

    /// Creates an item value.
    public init(id: Int, title: String, done: Bool = false) {
        self.id = id
        self.title = title
        self.done = done
    }

    /// `#3 [x] buy milk`: one line, whatever the title holds. `item add` refuses line breaks in a title (see
    /// ``StoreFile/problem(withTitle:)``), but a store file edited by hand may have them: they are shown as `\n`
    /// and `\r`.
    public var line: String {
        let shown = title.replacingOccurrences(of: "\r", with: "\\r").replacingOccurrences(of: "\n", with: "\\n")
        return "#\(id) [\(done ? "x" : " ")] \(shown)"
    }
}

/// The Listr store file: JSON, `{"version": 1, "nextID": 3, "items": [{"id": 1, "title": "...", "done": false}]}`.
///
/// Both `listr` (loading its store, `store replace`) and `listrctl` (checking a file before `store replace`) read it
/// through ``decode(_:)``, so both apply the same rules.
public struct StoreFile: Codable, Sendable, Equatable {
    /// The format version this code reads and writes.
    public static let currentVersion = 1
    /// The longest title, in bytes of UTF-8.
    public static let maximumTitleLength = 1000
    /// The most items a store holds.
    public static let maximumItems = 100_000
    /// The largest ``nextID`` a store may say (2^62): ids stay far from `Int.max`, whatever a file or a
    /// `store replace` brings.
    public static let maximumNextID = 1 << 62

    /// Always ``currentVersion``.
    public var version: Int
    /// The id the next item gets; above every id in ``items``.
    public var nextID: Int
    /// The items, in the order they were added.
    public var items: [TodoItem]

    /// Creates a store value; the default is an empty store.
    public init(version: Int = StoreFile.currentVersion, nextID: Int = 1, items: [TodoItem] = []) {
        self.version = version
        self.nextID = nextID
        self.items = items
    }

    /// An empty store.
    public static let empty = StoreFile()

    /// Why `title` cannot be the title of a new item, in words; `nil` when it can. A title is 1 to
    /// ``maximumTitleLength`` bytes of UTF-8, not only spaces, on one line: no line break, tab or other control
    /// character (they would break `item list`'s one item a line, or drive the terminal).
    public static func problem(withTitle title: String) -> String? {
        if title.unicodeScalars.allSatisfy({ $0.properties.isWhitespace }) {
            return title.isEmpty ? "a title cannot be empty" : "a title cannot be only spaces"
        }
        if title.utf8.count > maximumTitleLength {
            return "a title must be at most \(maximumTitleLength) bytes, got \(title.utf8.count)"
        }
        if let scalar = title.unicodeScalars.first(where: isControl) {
            let name =
                scalar == "\n" || scalar == "\r" ? "a line break" : scalar == "\t" ? "a tab" : "a control character"
            return "a title is one line of text: it cannot contain \(name)"
        }
        return nil
    }

    /// C0 and C1 control characters (line breaks and tabs included), the Unicode line and paragraph separators, and
    /// the bidirectional controls (which can make a title read as something else).
    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069: return true
        default: return false
        }
    }

    /// Decodes and validates a store file's bytes.
    /// - Throws: ``StoreFileError/invalid(_:)`` saying what is wrong.
    public static func decode(_ bytes: Data) throws(StoreFileError) -> StoreFile {
        let file: StoreFile
        do {
            file = try JSONDecoder().decode(StoreFile.self, from: bytes)
        } catch let error as DecodingError {
            throw .invalid(DecodingErrorText.describe(error))
        } catch {
            throw .invalid("\(error)")
        }
        try file.validate()
        return file
    }

    /// Checks the rules a decoded store must follow.
    public func validate() throws(StoreFileError) {
        guard version == Self.currentVersion else {
            throw .invalid("version \(version) is not supported (this listr reads version \(Self.currentVersion))")
        }
        guard items.count <= Self.maximumItems else {
            throw .invalid("\(items.count) items, over the limit of \(Self.maximumItems)")
        }
        var seen = Set<Int>()
        for item in items {
            guard item.id >= 1 else { throw .invalid("item id \(item.id) is not positive") }
            guard seen.insert(item.id).inserted else { throw .invalid("item id \(item.id) appears twice") }
            guard !item.title.isEmpty, item.title.utf8.count <= Self.maximumTitleLength else {
                throw .invalid("item #\(item.id) has an empty title or one over \(Self.maximumTitleLength) bytes")
            }
            guard item.id < nextID else { throw .invalid("nextID \(nextID) is not above item id \(item.id)") }
        }
        guard nextID >= 1 else { throw .invalid("nextID \(nextID) is not positive") }
        guard nextID <= Self.maximumNextID else {
            throw .invalid("nextID \(nextID) is over the largest id, \(Self.maximumNextID)")
        }
    }

    /// The file's bytes: pretty-printed JSON with sorted keys and a final newline.
    public func encoded() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        // Encoding plain structs of strings, integers and booleans cannot fail.
        var data = (try? encoder.encode(self)) ?? Data()
        data.append(0x0A)
        return data
    }

    /// Loads the store at `path`: a missing file is an empty store.
    /// - Throws: ``StoreFileError/unreadable(path:reason:)`` or ``StoreFileError/corrupt(path:reason:)``.
    public static func load(from path: String) throws(StoreFileError) -> StoreFile {
        let bytes: Data
        do {
            bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            if !FileManager.default.fileExists(atPath: path) { return .empty }
            throw .unreadable(path: path, reason: CocoaErrorReason.describe(error))
        }
        do {
            return try decode(bytes)
        } catch {
            guard case .invalid(let reason) = error else { throw error }
            throw .corrupt(path: path, reason: reason)
        }
    }
}

/// Why a store file cannot be used.
public enum StoreFileError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The bytes are not a valid store.
    case invalid(String)
    /// The store file exists but is not a valid store.
    case corrupt(path: String, reason: String)
    /// The store file exists but cannot be read.
    case unreadable(path: String, reason: String)

    /// The message a user reads.
    public var description: String {
        switch self {
        case .invalid(let reason):
            return "not a valid Listr store: \(reason)"
        case .corrupt(let path, let reason):
            return "\(path) is not a valid Listr store (\(reason)); fix it or move it away (listr never overwrites it)"
        case .unreadable(let path, let reason):
            return "cannot read \(path): \(reason)"
        }
    }
}

/// Short reasons for Foundation file errors.
enum CocoaErrorReason {
    static func describe(_ error: any Error) -> String {
        let nsError = error as NSError
        if let underlying = nsError.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain
        {
            return String(cString: strerror(Int32(underlying.code)))
        }
        return nsError.localizedDescription
    }
}
