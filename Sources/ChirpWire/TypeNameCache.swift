import NIOCore

/// The type names a connection received lately, matched on their bytes.
///
/// Every message, request and response frame names its type. Making a `String` of that name for each frame costs an
/// allocation once the name is longer than 15 bytes (Swift stores shorter ones inline), which the default,
/// module-qualified names usually are (`ListrCommands.AddItem`), and a pass over its bytes to validate the UTF-8. A
/// peer sends the same few names again and again, so each connection's handler keeps the last
/// ``capacity`` names it made: a frame whose name bytes equal one of them gets that string, with no allocation and no
/// validation (the bytes are those of a string already validated). A name not seen before is validated and made once,
/// and replaces the oldest entry when the cache is full.
///
/// Bounded: at most ``capacity`` names of at most ``WireFormat/maxTypeNameLength`` bytes each, whatever the peer
/// sends. A peer that sends a new name in every frame costs what it cost before the cache: one string per frame.
/// Owned by one connection's handler and used on its event loop only, like the rest of its state.
package struct TypeNameCache {
    /// How many names a connection keeps.
    package static let capacity = 16

    private var names: [String] = []
    /// The entry a new name replaces once the cache is full (the oldest one).
    private var nextReplaced = 0

    package init() {}

    /// The name whose UTF-8 is the readable bytes of `bytes`, or `nil` when they are not valid UTF-8.
    package mutating func name(of bytes: ByteBuffer) -> String? {
        if let known = lookup(bytes) { return known }
        guard let name = Self.validUTF8(bytes) else { return nil }
        if names.count < Self.capacity {
            if names.isEmpty { names.reserveCapacity(Self.capacity) }
            names.append(name)
        } else {
            names[nextReplaced] = name
            nextReplaced = (nextReplaced + 1) % Self.capacity
        }
        return name
    }

    /// A cached name equal to the readable bytes of `bytes`.
    private func lookup(_ bytes: ByteBuffer) -> String? {
        bytes.withUnsafeReadableBytes { received -> String? in
            for name in names where name.utf8.count == received.count {
                // Names in the cache were made by `validUTF8`: native strings, whose UTF-8 is contiguous.
                let equal = name.utf8.withContiguousStorageIfAvailable { stored in
                    stored.elementsEqual(received)
                }
                if equal == true { return name }
            }
            return nil
        }
    }

    /// The readable bytes as a string, or `nil` when they are not valid UTF-8.
    ///
    /// Decoding repairs invalid sequences, so the bytes are valid exactly when the string's UTF-8 is the same bytes.
    /// Compared over both contiguous buffers: a generic comparison with the buffer's view costs about 100 instructions
    /// a byte, on every message received.
    package static func validUTF8(_ bytes: ByteBuffer) -> String? {
        guard var text = bytes.getString(at: bytes.readerIndex, length: bytes.readableBytes) else { return nil }
        let unchanged = text.withUTF8 { decoded in
            bytes.withUnsafeReadableBytes { received in decoded.elementsEqual(received) }
        }
        return unchanged ? text : nil
    }
}
