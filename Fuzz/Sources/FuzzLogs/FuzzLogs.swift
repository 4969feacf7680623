// libFuzzer target: a log batch as a viewer receives it from a log source (`chirp logs`, `chirp-console`), then the
// lines `chirp logs` prints for what it decoded.
//
// Input layout: byte 0 holds options (bit 0: colours on, bit 1: show the host), the rest is the batch payload
// (LogProtocol.parseBatch: version, subscription, count, entries as RecordCoding describes them). Invariants checked
// beyond "no crash":
//   - a batch is refused only for its header (RecordCoding.DecodingError); otherwise it yields at most the entries it
//     claims, in order, each a record or an undecodable entry, and exactly those, all records, when it reports no
//     damage;
//   - what decoded re-encodes (LogProtocol.writeBatchHeader, RecordCoding.writeEntry) into a batch that decodes
//     again; a record within the writer's limits comes back equal (times to within 10 µs: they pass through Double),
//     and one beyond them comes back cut to the limits, after which a second round trip changes nothing;
//   - the formatter's lines for every record (LogFormatter.line, httpLine, httpDetail) carry no control character a
//     peer could use to forge a line or drive the terminal: with colours off none at all but httpDetail's own line
//     breaks, each of whose lines starts with one of its prefixes; with colours on, escape sequences are SGR only;
//   - `chirp logs --json`'s line for every record (LogJSON.line) is one line of JSON, without a control character,
//     whose message, label and metadata keys read back as the record has them.
import ChirpSupport
import Foundation
import Logging

/// The part of the log channel's protocol enum that LogBatch.swift extends (the rest needs the Chirp module).
enum LogProtocol {}

let origin = RecordCoding.Origin(appName: "fuzz-app", host: "fuzz-host", processID: 42)

func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("invariant violated: \(message())") }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzLogs(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let options = data[0]
    let payload = Data(UnsafeBufferPointer(start: data + 1, count: size - 1))

    let parsed: ParsedBatch
    do {
        parsed = try LogProtocol.parseBatch(payload, origin: origin)
    } catch {
        require(error is RecordCoding.DecodingError, "parseBatch threw \(type(of: error)), not a DecodingError")
        require(payload.count < 13 || payload.first != 1, "a batch with a whole version 1 header was refused: \(error)")
        _ = String(describing: error)  // the text a viewer logs
        return 0
    }
    let claimed = payload[9..<13].reduce(0) { $0 << 8 | Int($1) }  // it parsed: the header is there
    require(parsed.entryCount <= claimed, "\(parsed.entryCount) entries for a batch that claims \(claimed)")
    require(
        zip(parsed.undecodable, parsed.undecodable.dropFirst()).allSatisfy { $0.before <= $1.before }
            && parsed.undecodable.allSatisfy { $0.before <= parsed.records.count },
        "undecodable entries out of place: \(parsed.undecodable) among \(parsed.records.count) records")
    if parsed.damage == nil {
        require(parsed.entryCount == claimed, "no damage reported, but \(parsed.entryCount) of \(claimed) entries")
        require(parsed.undecodable.isEmpty, "no damage reported, but an entry did not decode")
    }
    let batch = (subscription: parsed.subscription, records: parsed.records)

    let again = roundTrip(batch)
    for (record, back) in zip(batch.records, again) {
        if fitsWriterLimits(record) {
            require(sameRecord(record, back), "a record within the writer's limits changed: \(record) -> \(back)")
        } else {
            require(fitsWriterLimits(back), "a re-encoded record is still beyond the writer's limits: \(back)")
        }
    }
    for (back, twice) in zip(again, roundTrip((batch.subscription, again))) {
        require(sameRecord(back, twice), "a second round trip changed a record: \(back) -> \(twice)")
    }

    let formatter = LogFormatter(useColor: options & 1 != 0, showHost: options & 2 != 0, localHost: "fuzz-host")
    for record in batch.records {
        checkJSON(LogJSON.line(for: record), of: record)
        checkLine(formatter.line(for: record), colour: formatter.useColor, what: "line")
        if let line = formatter.httpLine(for: record) {
            checkLine(line, colour: formatter.useColor, what: "httpLine")
        }
        if let detail = formatter.httpDetail(for: record) {
            let plain = checkedSGR(detail, colour: formatter.useColor, what: "httpDetail")
            for line in plain.split(separator: "\n", omittingEmptySubsequences: false) {
                // Compared by scalars: `hasPrefix` compares characters, and "! " followed by a joiner is not "! ".
                require(
                    ["── ", "> ", "< ", "! ", "  "].contains { line.unicodeScalars.starts(with: $0.unicodeScalars) },
                    "httpDetail has a line the formatter did not start: \(line.debugDescription)")
                require(
                    !line.unicodeScalars.contains(where: UntrustedText.needsEscape),
                    "httpDetail has a control character: \(line.debugDescription)")
            }
        }
    }
    return 0
}

/// The records of `batch` written by the source's encoder and parsed again.
func roundTrip(_ batch: (subscription: UInt64, records: [LogRecord])) -> [LogRecord] {
    var bytes: [UInt8] = []
    LogProtocol.writeBatchHeader(subscription: batch.subscription, count: batch.records.count, into: &bytes)
    for record in batch.records { RecordCoding.writeEntry(record, into: &bytes) }
    do {
        let parsed = try LogProtocol.parseBatch(Data(bytes), origin: origin)
        require(parsed.subscription == batch.subscription, "the subscription changed")
        require(parsed.damage == nil, "what the encoder wrote is damaged: \(parsed.damage ?? "")")
        require(parsed.records.count == batch.records.count, "the record count changed")
        return parsed.records
    } catch {
        fatalError("invariant violated: what the encoder wrote does not decode: \(error)")
    }
}

/// `a` and `b` are the same record, their times to within 10 µs (nanoseconds since 1970 pass through a `Double` of
/// seconds, exact to about 2 µs at the ends of `Int64`'s range).
func sameRecord(_ a: LogRecord, _ b: LogRecord) -> Bool {
    func close(_ x: Double, _ y: Double) -> Bool { abs(x - y) <= 1e-5 }
    var b = b
    guard close(a.timestamp.timeIntervalSince1970, b.timestamp.timeIntervalSince1970) else { return false }
    b.timestamp = a.timestamp
    if let exchange = a.http, var other = b.http {
        guard close(exchange.startTime.timeIntervalSince1970, other.startTime.timeIntervalSince1970),
            close(exchange.duration, other.duration)
        else { return false }
        other.startTime = exchange.startTime
        other.duration = exchange.duration
        b.http = other
    }
    return a == b
}

/// Whether the encoder writes `record` as it is: no string, count or nesting beyond its limits.
func fitsWriterLimits(_ record: LogRecord) -> Bool {
    func fits(_ string: String, _ limit: Int) -> Bool { string.utf8.count <= limit }
    func fits(_ metadata: Logger.Metadata, depth: Int) -> Bool {
        metadata.count <= RecordCoding.maximumEntries
            && metadata.allSatisfy { fits($0.key, RecordCoding.maximumNameBytes) && fits($0.value, depth: depth + 1) }
    }
    func fits(_ value: Logger.MetadataValue, depth: Int) -> Bool {
        switch value {
        case .string(let string): return fits(string, RecordCoding.maximumValueBytes)
        case .stringConvertible(let value): return fits(value.description, RecordCoding.maximumValueBytes)
        case .array(let values):
            return depth < RecordCoding.maximumDepth && values.count <= RecordCoding.maximumEntries
                && values.allSatisfy { fits($0, depth: depth + 1) }
        case .dictionary(let metadata): return depth < RecordCoding.maximumDepth && fits(metadata, depth: depth)
        }
    }
    func fits(_ headers: [HTTPHeader]) -> Bool {
        headers.count <= RecordCoding.maximumEntries
            && headers.allSatisfy {
                fits($0.name, RecordCoding.maximumNameBytes) && fits($0.value, RecordCoding.maximumValueBytes)
            }
    }
    let names = [record.label, record.source, record.file, record.function]
    guard names.allSatisfy({ fits($0, RecordCoding.maximumNameBytes) }),
        fits(record.message, RecordCoding.maximumMessageBytes), fits(record.metadata, depth: 0)
    else { return false }
    guard let exchange = record.http else { return true }
    return fits(exchange.method, RecordCoding.maximumNameBytes) && fits(exchange.url, RecordCoding.maximumValueBytes)
        && fits(exchange.requestHeaders) && fits(exchange.responseHeaders)
        && fits(exchange.error ?? "", RecordCoding.maximumValueBytes)
}

/// A one-line rendering: no line break, and no control character but the SGR sequences of its colours.
func checkLine(_ line: String, colour: Bool, what: String) {
    let plain = checkedSGR(line, colour: colour, what: what)
    require(
        !plain.unicodeScalars.contains(where: UntrustedText.needsEscape),
        "\(what) has a control character: \(line.debugDescription)")
}

/// `text` without its colour sequences, each checked to be SGR (`ESC [ digits/semicolons m`); without colours there
/// must be no escape at all.
func checkedSGR(_ text: String, colour: Bool, what: String) -> String {
    let scalars = Array(text.unicodeScalars)
    var plain = String.UnicodeScalarView()
    var index = 0
    while index < scalars.count {
        guard scalars[index] == "\u{1B}" else {
            plain.append(scalars[index])
            index += 1
            continue
        }
        require(colour, "\(what) has an escape with colours off: \(text.debugDescription)")
        require(index + 1 < scalars.count && scalars[index + 1] == "[", "\(what) has a non-CSI escape")
        var end = index + 2
        while end < scalars.count, scalars[end] == ";" || ("0"..."9").contains(scalars[end]) { end += 1 }
        require(end < scalars.count && scalars[end] == "m", "\(what) has a CSI sequence that is not SGR")
        index = end + 1
    }
    return String(plain)
}

/// `line` is one line of JSON, with no control character at all, holding `record`'s message, label and metadata keys.
func checkJSON(_ line: String, of record: LogRecord) {
    require(
        !line.unicodeScalars.contains(where: UntrustedText.needsEscape),
        "the JSON line has a control character: \(line.debugDescription)")
    let object: [String: Any]?
    do {
        object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
    } catch {
        fatalError("invariant violated: the JSON line does not parse (\(error)): \(line.debugDescription)")
    }
    require(object?["message"] as? String == record.message, "the JSON message differs: \(line.debugDescription)")
    require(object?["label"] as? String == record.label, "the JSON label differs: \(line.debugDescription)")
    let keys = (object?["metadata"] as? [String: Any]).map { Set($0.keys) }
    require(keys == Set(record.metadata.keys), "the JSON metadata keys differ: \(line.debugDescription)")
}
