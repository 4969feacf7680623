import NIOCore
import Testing

@testable import Chirp
@testable import ChirpWire

/// The names a connection received lately are matched on their bytes (``TypeNameCache``); what comes out is what a
/// parse without the cache gives, whatever the peer sends.
@Suite(.timeLimit(.minutes(5))) struct TypeNameCacheTests {
    private func bytes(_ text: String) -> ByteBuffer { ByteBuffer(string: text) }

    @Test func aNameSeenBeforeComesBackEqual() {
        var cache = TypeNameCache()
        let first = cache.name(of: bytes("ListrCommands.AddItem"))
        let again = cache.name(of: bytes("ListrCommands.AddItem"))
        #expect(first == "ListrCommands.AddItem")
        #expect(again == "ListrCommands.AddItem")
    }

    @Test func namesOfTheSameLengthAreToldApart() {
        var cache = TypeNameCache()
        #expect(cache.name(of: bytes("Module.TypeA")) == "Module.TypeA")
        #expect(cache.name(of: bytes("Module.TypeB")) == "Module.TypeB")
        #expect(cache.name(of: bytes("Module.TypeA")) == "Module.TypeA")
        // A prefix, and a longer name that starts with a cached one, are names of their own.
        #expect(cache.name(of: bytes("Module.Type")) == "Module.Type")
        #expect(cache.name(of: bytes("Module.TypeAB")) == "Module.TypeAB")
    }

    @Test func invalidUTF8IsRefusedEvenBesideACachedNameOfItsLength() {
        var cache = TypeNameCache()
        #expect(cache.name(of: bytes("abcd")) == "abcd")
        #expect(cache.name(of: ByteBuffer(bytes: [0x61, 0x62, 0x63, 0xFF])) == nil)
        #expect(cache.name(of: ByteBuffer(bytes: [0xC3, 0x28])) == nil)  // a lead byte without its continuation
        #expect(cache.name(of: bytes("abcd")) == "abcd")
    }

    @Test func aSliceIsMatchedOnItsReadableBytesOnly() {
        var cache = TypeNameCache()
        var buffer = ByteBuffer(string: "xxchat.linexx")
        buffer.moveReaderIndex(forwardBy: 2)
        let slice = buffer.getSlice(at: buffer.readerIndex, length: 9) ?? ByteBuffer()
        #expect(cache.name(of: slice) == "chat.line")
        #expect(cache.name(of: bytes("chat.line")) == "chat.line")
    }

    @Test func moreNamesThanItHoldsStillGiveTheRightNames() {
        // A peer that sends a new name in every frame: the oldest entries are replaced, every answer stays right.
        var cache = TypeNameCache()
        let names = (0..<(TypeNameCache.capacity * 3)).map { "Module.Type\($0)" }
        for name in names { #expect(cache.name(of: bytes(name)) == name) }
        for name in names.reversed() { #expect(cache.name(of: bytes(name)) == name) }
    }

    @Test func theParserGivesWhatItGaveWithoutTheCache() throws {
        var cache = TypeNameCache()
        var body = ByteBuffer()
        body.writeInteger(UInt8(0))
        body.writeInteger(UInt16(26))
        body.writeString("ChirpTests.SomeLongMessage")
        body.writeString(#"{"a":1}"#)
        for _ in 0..<3 {
            #expect(try FrameParser.message(body, names: &cache) == (try FrameParser.message(body)))
        }
    }
}
