// libFuzzer target: the handshake parser, the steps HandshakeHandler.channelRead takes on a connection's first frame.
//
// Input layout: byte 0 picks what the rest is (so the fuzzer spends its effort on the JSON, not on length prefixes):
//   byte 0 % 3 == 0   the body of a hello frame
//   byte 0 % 3 == 1   the body of a refuse frame
//   byte 0 % 3 == 2   the raw bytes a peer sends first (length prefix included)
// The frame goes through the connection's real FrameReader and FrameDecoder (handshake limit, WireFormat.maxHelloSize),
// in two reads split at a point taken from the input; a hello body then through Hello.parse and
// Hello.refusal(of:) against a fixed local hello. Invariants checked beyond "no crash":
//   - a first frame over the handshake limit is refused as "not a Chirp peer" (its length read back), before any
//     parsing;
//   - Hello.parse either returns a hello whose peer id is 1-128 bytes, or throws HandshakeError.malformedHello;
//   - a parsed hello round-trips: Hello.frame re-encodes it, FrameDecoder + Hello.parse read back an equal hello;
//   - refusal(of:) refuses exactly a different protocol version, a different service, or our own peer id, in that order;
//   - error descriptions (which are logged and sent to the peer) can be built for whatever was received.
import NIOCore
import NIOEmbedded

let local = Hello(peerID: "fuzz-local-peer", name: "fuzz", service: "chat", metadata: ["k": "v"])

func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("invariant violated: \(message())") }
}

/// The first frame of `stream`, read through the pipeline in two reads split at `split`; or the decoding error.
func firstFrame(of stream: ByteBuffer, split: Int, maxHelloSize: Int = WireFormat.maxHelloSize) -> Result<Frame?, Error>
{
    let channel = EmbeddedChannel(
        handler: FrameReader(FrameDecoder(maxFrameSize: 1 << 20, maxHelloSize: maxHelloSize)))
    defer { _ = try? channel.finish(acceptAlreadyClosed: true) }
    let cut = min(split, stream.readableBytes)
    do {
        try channel.writeInbound(stream.getSlice(at: stream.readerIndex, length: cut) ?? ByteBuffer())
        try channel.writeInbound(
            stream.getSlice(at: stream.readerIndex + cut, length: stream.readableBytes - cut) ?? ByteBuffer())
        return .success(try channel.readInbound(as: Frame.self))
    } catch {
        return .failure(error)
    }
}

func checkHello(body: ByteBuffer) {
    let remote: Hello
    do {
        remote = try Hello.parse(body)
    } catch let error as HandshakeError {
        guard case .malformedHello = error else { return require(false, "Hello.parse threw \(error)") }
        _ = error.description
        return
    } catch {
        return require(false, "Hello.parse threw \(type(of: error)): \(error)")
    }
    require(
        !remote.peerID.isEmpty && remote.peerID.utf8.count <= 128,
        "peer id of \(remote.peerID.utf8.count) bytes accepted")

    // Round trip through our own encoder, the decoder (with room for JSON escaping) and the parser.
    do {
        let frame = try remote.frame(allocator: ByteBufferAllocator())
        guard case .success(let decoded?) = firstFrame(of: frame, split: frame.readableBytes / 2, maxHelloSize: 1 << 20)
        else {
            return require(false, "our own hello frame did not decode: \(remote)")
        }
        require(decoded.knownKind == .hello, "our hello frame has kind \(decoded.kind)")
        let again = try Hello.parse(decoded.body)
        require(again == remote, "hello round trip changed \(remote) into \(again)")
    } catch {
        require(false, "hello round trip threw \(error) for \(remote)")
    }

    let refusal = local.refusal(of: remote)
    let expected: HandshakeError?
    if remote.protocolVersion != local.protocolVersion {
        expected = .protocolMismatch(local: local.protocolVersion, remote: remote.protocolVersion)
    } else if remote.service != local.service {
        expected = .serviceMismatch(local: local.service, remote: remote.service)
    } else if remote.peerID == local.peerID {
        expected = .connectedToSelf
    } else {
        expected = nil
    }
    require(refusal == expected, "refusal \(String(describing: refusal)), expected \(String(describing: expected))")
    if let refusal {
        _ = FrameWriter.frame(.refuse, text: refusal.description, allocator: ByteBufferAllocator())
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHello(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let mode = data[0] % 3
    let rest = UnsafeBufferPointer(start: data + 1, count: size - 1)
    let allocator = ByteBufferAllocator()
    let stream: ByteBuffer
    switch mode {
    case 0: stream = FrameWriter.frame(.hello, body: allocator.buffer(bytes: rest), allocator: allocator)
    case 1: stream = FrameWriter.frame(.refuse, body: allocator.buffer(bytes: rest), allocator: allocator)
    default: stream = allocator.buffer(bytes: rest)
    }
    let split = Int(data[0] / 3)

    switch firstFrame(of: stream, split: split) {
    case .failure(let error as FrameDecodingError):
        if mode != 2 {
            require(
                error == FrameDecodingError(reason: .notAChirpPeer(firstBytes: UInt32(rest.count + 1))),
                "a whole \(rest.count)-byte body failed with \(error)")
        }
        _ = error.description
    case .failure(let error):
        require(false, "decoding threw \(type(of: error)): \(error)")
    case .success(nil):
        require(mode == 2, "a whole frame was not decoded")
    case .success(let frame?):
        if mode != 2 {
            require(rest.count + 1 <= WireFormat.maxHelloSize, "a \(rest.count)-byte hello body passed the limit")
        }
        switch frame.knownKind {
        case .hello:
            checkHello(body: frame.body)
        case .refuse:
            // What HandshakeHandler reports as the refusal reason.
            let reason =
                frame.body.getString(at: frame.body.readerIndex, length: min(frame.body.readableBytes, 1024))
                ?? "no reason given"
            _ = HandshakeError.refusedByRemote(reason: reason).description
        default:
            _ = HandshakeError.unexpectedFrame(kind: frame.kind).description
        }
    }
    return 0
}
