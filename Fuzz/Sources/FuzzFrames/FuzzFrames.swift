// libFuzzer target: the frame decoder, driven the way a connection drives it.
//
// Input layout (so the fuzzer chooses limits and read boundaries as well as bytes):
//   byte 0       limits: bits 0-2 pick maxFrameSize, bits 3-4 pick maxHelloSize (tables below)
//   byte 1       n = byte % 9: how many chunk sizes follow (0: the stream arrives in one read)
//   n bytes      chunk sizes, used in turn until the stream is fed (0: everything that is left; the 64th read
//                takes everything that is left too)
//   the rest     the byte stream a peer sends, then the connection closes
//
// The stream goes through the connection's real FrameReader (FrameDecoder inside) in an EmbeddedChannel, one
// channelRead per chunk, then channelInactive (so an unfinished frame is reported). Invariants checked beyond "no crash":
//   - the frames and the error are exactly those of a straightforward reference model of the wire format
//     (Docs/Protocol.md), whatever the chunking: partial reads change nothing;
//   - the error, if any, is a FrameDecodingError, and only the first one counts;
//   - re-encoding the frames gives back exactly the bytes they were decoded from, a prefix of the stream;
//   - never more frames than stream bytes / 5; every frame within the limit that applied to it;
//   - message, request and response bodies parse (FrameParser) or throw MalformedFrameError; a parsed body
//     re-encodes (FrameWriter) to the same bytes, and its type name is 1...maxTypeNameLength bytes of UTF-8;
//   - the bodies of one stream are parsed through one TypeNameCache, as a connection parses them, and give exactly
//     what a parse without the cache gives.
import NIOCore
import NIOEmbedded

let maxFrameSizes = [1, 5, 64, 1024, WireFormat.maxHelloSize, WireFormat.maxHelloSize + 1, 1 << 20, 64 << 20]
let maxHelloSizes = [WireFormat.maxHelloSize, 1, 6, 300]
/// The most reads one input is fed in.
let maxReads = 64

func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("invariant violated: \(message())") }
}

/// What the wire format says a stream decodes to: its frames, then the error that ends it (if any).
func referenceDecode(_ stream: [UInt8], maxFrameSize: Int, maxHelloSize: Int) -> (
    frames: [Frame], error: FrameDecodingError?
) {
    var frames: [Frame] = []
    var offset = 0
    while true {
        let remaining = stream.count - offset
        if remaining == 0 { return (frames, nil) }
        if remaining < 4 { return (frames, FrameDecodingError(reason: .truncatedFrame(missing: 4 - remaining))) }
        let length = stream[offset..<offset + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let first = frames.isEmpty
        if first && stream[offset] == 0x16 && stream[offset + 1] == 0x03 {
            return (frames, FrameDecodingError(reason: .tlsRecord))
        }
        if length == 0 { return (frames, FrameDecodingError(reason: .emptyFrame)) }
        let limit = first ? min(maxHelloSize, maxFrameSize) : maxFrameSize
        if Int(length) > limit {
            if first { return (frames, FrameDecodingError(reason: .notAChirpPeer(firstBytes: length))) }
            return (frames, FrameDecodingError(reason: .frameTooLarge(length: length, limit: limit)))
        }
        if remaining < 4 + Int(length) {
            return (frames, FrameDecodingError(reason: .truncatedFrame(missing: 4 + Int(length) - remaining)))
        }
        frames.append(
            Frame(kind: stream[offset + 4], body: ByteBuffer(bytes: stream[offset + 5..<offset + 4 + Int(length)])))
        offset += 4 + Int(length)
    }
}

/// Feeds `chunks` through the pipeline as separate reads, then closes; the frames read and the first error.
func pipelineDecode(_ chunks: [ArraySlice<UInt8>], maxFrameSize: Int, maxHelloSize: Int) -> (
    frames: [Frame], error: Error?
) {
    let channel = EmbeddedChannel(
        handler: FrameReader(FrameDecoder(maxFrameSize: maxFrameSize, maxHelloSize: maxHelloSize)))
    // Active, as a connected socket is; closing it later reports an unfinished frame.
    _ = try? channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 7)).wait()
    var frames: [Frame] = []
    var firstError: Error?
    func drain() {
        while let frame = try? channel.readInbound(as: Frame.self) { frames.append(frame) }
    }
    for chunk in chunks {
        do {
            try channel.writeInbound(channel.allocator.buffer(bytes: chunk))
        } catch {
            firstError = error
            break
        }
        drain()
    }
    drain()
    let wasFailing = firstError != nil
    _ = try? channel.close().wait()
    channel.embeddedEventLoop.run()  // the channel takes its handlers down on the loop: run it, or they leak
    do {
        try channel.throwIfErrorCaught()
    } catch {
        // A decode error after an earlier one would be a bug of its own: the reader stops at the first.
        require(!wasFailing, "a second error after \(String(describing: firstError)): \(error)")
        firstError = error
    }
    drain()
    return (frames, firstError)
}

func checkBody(of frame: Frame, names: inout TypeNameCache) {
    guard let kind = frame.knownKind, [.message, .request, .response].contains(kind) else { return }
    let uncached = Result { () throws -> MessageBody in
        switch kind {
        case .request: return try FrameParser.request(frame.body).message
        case .response: return try FrameParser.response(frame.body).message
        default: return try FrameParser.message(frame.body)
        }
    }
    do {
        var reencoded = ByteBuffer()
        let message: MessageBody
        switch kind {
        case .request:
            let request = try FrameParser.request(frame.body, names: &names)
            reencoded.writeInteger(request.requestID)
            message = request.message
        case .response:
            let response = try FrameParser.response(frame.body, names: &names)
            reencoded.writeInteger(response.requestID)
            reencoded.writeInteger(response.status.rawValue)
            message = response.message
        default:
            message = try FrameParser.message(frame.body, names: &names)
        }
        require((try? uncached.get()) == message, "\(kind) body parses differently through the type-name cache")
        let nameBytes = message.typeName.utf8.count
        require(nameBytes >= 1 && nameBytes <= WireFormat.maxTypeNameLength, "type name of \(nameBytes) bytes accepted")
        FrameWriter.writeMessageHeader(typeName: message.typeName, flags: message.flags, into: &reencoded)
        var payload = message.payload
        reencoded.writeBuffer(&payload)
        require(
            reencoded == frame.body,
            "\(kind) body re-encodes to \(reencoded.readableBytesView) not \(frame.body.readableBytesView)")
    } catch let error as MalformedFrameError {
        require(error.kind == kind, "\(kind) body reported as malformed \(error.kind)")
        require(
            (try? uncached.get()) == nil, "\(kind) body refused through the type-name cache, parsed without it")
        _ = error.description
    } catch {
        require(false, "\(kind) body threw \(type(of: error)): \(error)")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFrames(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    guard input.count >= 2 else { return 0 }
    let maxFrameSize = maxFrameSizes[Int(input[0] & 0x07)]
    let maxHelloSize = maxHelloSizes[Int(input[0] >> 3 & 0x03)]
    let chunkCount = Int(input[1] % 9)
    guard input.count >= 2 + chunkCount else { return 0 }
    let sizes = input[2..<2 + chunkCount].map(Int.init)
    let stream = Array(input[(2 + chunkCount)...])

    var chunks: [ArraySlice<UInt8>] = []
    var offset = 0
    var turn = 0
    while offset < stream.count {
        // At most maxReads reads, the last one taking the rest: each read costs a trip through the pipeline, and
        // byte-by-byte reads of a 4 KiB input would spend the fuzzer's time on NIO rather than on new inputs.
        let whole = sizes.isEmpty || sizes[turn % sizes.count] == 0 || turn == maxReads - 1
        let size = whole ? stream.count - offset : min(sizes[turn % sizes.count], stream.count - offset)
        chunks.append(stream[offset..<offset + size])
        offset += size
        turn += 1
    }

    let expected = referenceDecode(stream, maxFrameSize: maxFrameSize, maxHelloSize: maxHelloSize)
    let actual = pipelineDecode(chunks, maxFrameSize: maxFrameSize, maxHelloSize: maxHelloSize)

    require(actual.frames == expected.frames, "frames \(actual.frames) but the wire format says \(expected.frames)")
    switch actual.error {
    case nil:
        require(expected.error == nil, "no error, expected \(String(describing: expected.error))")
    case let error as FrameDecodingError:
        require(error == expected.error, "error \(error), expected \(String(describing: expected.error))")
        _ = error.description
    case let error?:
        require(false, "threw \(type(of: error)): \(error)")
    }

    require(actual.frames.count <= stream.count / 5, "\(actual.frames.count) frames from \(stream.count) bytes")
    var reencoded = ByteBuffer()
    var names = TypeNameCache()
    for (index, frame) in actual.frames.enumerated() {
        let limit = index == 0 ? min(maxHelloSize, maxFrameSize) : maxFrameSize
        require(1 + frame.body.readableBytes <= limit, "frame of \(1 + frame.body.readableBytes) bytes over \(limit)")
        reencoded.writeInteger(UInt32(1 + frame.body.readableBytes))
        reencoded.writeInteger(frame.kind)
        reencoded.writeImmutableBuffer(frame.body)
        checkBody(of: frame, names: &names)
    }
    require(
        reencoded.readableBytesView.elementsEqual(stream.prefix(reencoded.readableBytes)),
        "re-encoded frames differ from the stream")
    return 0
}
