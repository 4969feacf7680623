import Foundation

/// Which partial files a receiver deletes when it starts receiving: those untouched for longer than the retention,
/// then the least recently touched until the rest fit the size bound. A value: the files and the time in, the names
/// to delete out.
struct PartialFileRetention {
    /// A partial file as the directory lists it.
    struct File: Equatable {
        var name: String
        var size: Int64
        var modified: Date
    }

    /// How long a partial file nothing writes to is kept.
    var retention: Duration
    /// The most bytes the partial files kept may take.
    var maximumBytes: Int64

    /// The names of `files` to delete at `now`: every file modified before `now - retention`, then the oldest of the
    /// others until the rest take at most ``maximumBytes``.
    func expired(_ files: [File], now: Date) -> [String] {
        let seconds = Double(retention.components.seconds) + Double(retention.components.attoseconds) / 1e18
        let cutoff = now.addingTimeInterval(-seconds)
        var doomed: [String] = []
        var kept: [File] = []
        for file in files {
            if file.modified < cutoff { doomed.append(file.name) } else { kept.append(file) }
        }
        // Oldest first; the name breaks ties, so that the outcome does not depend on the listing's order.
        kept.sort { ($0.modified, $0.name) < ($1.modified, $1.name) }
        var total = kept.reduce(Int64(0)) { $0 + $1.size }
        for file in kept where total > maximumBytes {
            doomed.append(file.name)
            total -= file.size
        }
        return doomed
    }

    /// Deletes the expired partial files (`*.part`) of `directory` at `now`; returns the names deleted.
    @discardableResult
    func clean(directory: String, now: Date = Date()) -> [String] {
        let fileManager = FileManager.default
        let names = (try? fileManager.contentsOfDirectory(atPath: directory)) ?? []
        var files: [File] = []
        for name in names where name.hasSuffix(".part") {
            let path = (directory as NSString).appendingPathComponent(name)
            guard let attributes = try? fileManager.attributesOfItem(atPath: path),
                (attributes[.type] as? FileAttributeType) == .typeRegular,
                let size = (attributes[.size] as? NSNumber)?.int64Value,
                let modified = attributes[.modificationDate] as? Date
            else { continue }
            files.append(File(name: name, size: size, modified: modified))
        }
        let doomed = expired(files, now: now)
        for name in doomed { unlink((directory as NSString).appendingPathComponent(name)) }
        return doomed
    }
}
