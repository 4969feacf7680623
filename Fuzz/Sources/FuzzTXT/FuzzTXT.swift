// libFuzzer target: TXT records as browsed peers advertise them (TXTRecord.init(bytes:), RFC 6763 section 6).
//
// The input is the TXT record's wire form. Invariants checked beyond "no crash":
//   - never more entries than bytes, no entry with an empty key or a key holding '=';
//   - the lookups Chirp makes (subscript, dictionary) agree: the first of duplicate keys wins;
//   - re-encoding (TXTRecord.bytes) and parsing again gives back every entry that can be encoded, in order;
//   - the wire form written is well formed: each entry's length byte matches, and the whole is at least one byte.
func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("invariant violated: \(message())") }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTXT(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeBufferPointer(start: data, count: size)
    let record = TXTRecord(bytes: input)
    require(record.entries.count <= size, "\(record.entries.count) entries from \(size) bytes")
    for entry in record.entries {
        require(!entry.key.isEmpty, "an entry with an empty key")
        require(!entry.key.utf8.contains(UInt8(ascii: "=")), "a key holding '='")
    }

    let dictionary = record.dictionary
    for (key, value) in dictionary {
        let first = record.entries.first { $0.key == key }
        require(first?.value == value, "dictionary[\(key)] is not the first entry's value")
    }
    for key in [
        TXTRecord.ReservedKey.peerID, TXTRecord.ReservedKey.name, TXTRecord.ReservedKey.protocolVersion,
        TXTRecord.ReservedKey.secure
    ] {
        let expected = record.entries.first { $0.key.lowercased() == key }?.value
        require(record[key] == expected, "subscript[\(key)] disagrees with the entries")
    }

    let encodable = record.entries.filter { TXTRecord.problem(key: $0.key, value: $0.value) == nil }
    let wire = record.bytes
    require(!wire.isEmpty, "an empty wire form")
    var index = 0
    while index < wire.count {
        let length = Int(wire[index])
        require(index + 1 + length <= wire.count, "entry length runs past the end of what we wrote")
        index += 1 + length
    }
    let again = TXTRecord(bytes: wire)
    require(again == TXTRecord(encodable), "round trip changed \(encodable) into \(again.entries)")
    return 0
}
