import NIOCore
import Testing

@testable import Chirp
@testable import ChirpWire

/// A first frame whose length is past the hello limit is not from a Chirp peer: said in words, with a guess at what
/// answered, rather than as "a frame of 1213486160 bytes". Later frames keep their size limit as before.
@Suite(.timeLimit(.minutes(1))) struct FirstFrameTests {
    @Test(arguments: [
        ("HTTP/1.1 400 Bad Request\r\n", "this is not a Chirp peer (it answered like an HTTP server)"),
        ("GET / HTTP/1.1\r\n", "this is not a Chirp peer (it sent an HTTP request)"),
        ("SSH-2.0-OpenSSH_9.2\r\n", "this is not a Chirp peer (it answered like an SSH server)"),
        ("\u{15}\u{03}\u{03}\u{00}\u{02}\u{02}\u{32}", "this is not a Chirp peer (it answered with TLS)"),
        ("220 mail.example.com ESMTP\r\n", "this is not a Chirp peer (what it sent is not a Chirp hello)")
    ])
    func aFirstFrameThatIsNoHelloIsSaidInWords(_ text: String, _ expected: String) throws {
        var decoder = FrameDecoder(maxFrameSize: 64 << 20)
        var buffer = ByteBuffer(string: text)
        do {
            _ = try decoder.decodeFrame(from: &buffer)
            Issue.record("decoded a frame from \(text.debugDescription)")
        } catch let error as FrameDecodingError {
            #expect(error.description == expected)
            guard case .notAChirpPeer = error.reason else {
                Issue.record("\(error.reason)")
                return
            }
        }
    }

    @Test func aLaterFrameOverTheLimitIsStillTooLarge() throws {
        var decoder = FrameDecoder(maxFrameSize: 1024)
        var buffer = ByteBuffer()
        buffer.writeInteger(UInt32(3))
        buffer.writeBytes([1, 0x7B, 0x7D])  // a hello-sized first frame
        buffer.writeString("HTTP")  // then a "length" of 1.2 GB
        #expect(try decoder.decodeFrame(from: &buffer) != nil)
        #expect(throws: FrameDecodingError(reason: .frameTooLarge(length: 0x4854_5450, limit: 1024))) {
            _ = try decoder.decodeFrame(from: &buffer)
        }
    }
}
