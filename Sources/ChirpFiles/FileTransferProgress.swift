/// How far a transfer has come: the bytes the receiver has written to disk, out of the file's size.
public struct FileTransferProgress: Sendable, Equatable {
    /// Bytes on the receiver's disk (acknowledged, on the sending side).
    public var completedBytes: Int64
    /// The file's size.
    public var totalBytes: Int64

    /// Creates a progress value.
    public init(completedBytes: Int64, totalBytes: Int64) {
        self.completedBytes = completedBytes
        self.totalBytes = totalBytes
    }

    /// `completedBytes / totalBytes`, between 0 and 1 (1 for an empty file).
    public var fractionCompleted: Double {
        totalBytes > 0 ? Double(completedBytes) / Double(totalBytes) : 1
    }

    /// Whether every byte is there.
    public var isComplete: Bool { completedBytes >= totalBytes }
}
