import Foundation
import NIOCore
import Testing

@testable import Chirp
@testable import ChirpDiscovery
@testable import ChirpWire

@Suite(.timeLimit(.minutes(5))) struct HelloTests {
    let local = Hello(peerID: "A", name: "alice", service: "chat", metadata: ["room": "1"])

    @Test func roundTrip() throws {
        var frame = try local.frame(allocator: ByteBufferAllocator())
        var decoder = FrameDecoder(maxFrameSize: 1 << 20)
        let decoded = try #require(try decoder.decodeFrame(from: &frame))
        #expect(decoded.knownKind == .hello)
        #expect(try Hello.parse(decoded.body) == local)
    }

    @Test func theWireFormIsPlainJSON() throws {
        let frame = try local.frame(allocator: ByteBufferAllocator())
        let json = frame.getString(at: 5, length: frame.readableBytes - 5) ?? ""
        #expect(json == #"{"metadata":{"room":"1"},"name":"alice","peerID":"A","protocol":1,"service":"chat"}"#)
    }

    /// `features` goes on the wire only when there are some (an older peer's hello has none), and a value this
    /// version cannot read counts as none.
    @Test func featuresAreLeftOutWhenEmptyAndReadLeniently() throws {
        var announcing = local
        announcing.features = Hello.currentFeatures
        let frame = try announcing.frame(allocator: ByteBufferAllocator())
        let json = frame.getString(at: 5, length: frame.readableBytes - 5) ?? ""
        #expect(json.hasPrefix(#"{"features":["parts"],"metadata""#))
        #expect(try Hello.parse(ByteBuffer(string: json)).acceptsParts)
        #expect(!local.acceptsParts)
        let base = #""peerID":"B","name":"b","service":"chat","protocol":1"#
        #expect(try Hello.parse(ByteBuffer(string: "{\(base)}")).features == [])
        #expect(try Hello.parse(ByteBuffer(string: #"{"features":"parts","# + base + "}")).features == [])
        #expect(try Hello.parse(ByteBuffer(string: #"{"features":["parts",7],"# + base + "}")).features == [])
        #expect(try Hello.parse(ByteBuffer(string: #"{"features":["later","parts"],"# + base + "}")).acceptsParts)
    }

    /// `pairing` goes on the wire only when true, and only a JSON `true` asks for pairing.
    @Test func pairingIsLeftOutUnlessAskedAndReadStrictly() throws {
        var asking = local
        asking.pairing = true
        let frame = try asking.frame(allocator: ByteBufferAllocator())
        let json = frame.getString(at: 5, length: frame.readableBytes - 5) ?? ""
        #expect(json.contains(#""pairing":true"#))
        #expect(try Hello.parse(ByteBuffer(string: json)).pairing)
        let plain = try local.frame(allocator: ByteBufferAllocator())
        #expect(!(plain.getString(at: 5, length: plain.readableBytes - 5) ?? "").contains("pairing"))
        let base = #""peerID":"B","name":"b","service":"chat","protocol":1"#
        #expect(try !Hello.parse(ByteBuffer(string: "{\(base)}")).pairing)
        #expect(try !Hello.parse(ByteBuffer(string: #"{"pairing":"true","# + base + "}")).pairing)
        #expect(try !Hello.parse(ByteBuffer(string: #"{"pairing":1,"# + base + "}")).pairing)
        #expect(try !Hello.parse(ByteBuffer(string: #"{"pairing":false,"# + base + "}")).pairing)
    }

    @Test func refusesMismatches() {
        #expect(local.refusal(of: Hello(peerID: "B", name: "bob", service: "chat", metadata: [:])) == nil)
        #expect(
            local.refusal(of: Hello(protocolVersion: 2, peerID: "B", name: "bob", service: "chat", metadata: [:]))
                == .protocolMismatch(local: 1, remote: 2))
        #expect(
            local.refusal(of: Hello(peerID: "B", name: "bob", service: "other", metadata: [:]))
                == .serviceMismatch(local: "chat", remote: "other"))
        #expect(local.refusal(of: Hello(peerID: "A", name: "me", service: "chat", metadata: [:])) == .connectedToSelf)
    }

    @Test(arguments: ["", "not json", "[]", #"{"protocol":1}"#, #"{"protocol":1,"peerID":"","name":"x","service":"y"}"#]
    )
    func malformedHellosAreRefused(_ text: String) {
        #expect(throws: HandshakeError.self) { try Hello.parse(ByteBuffer(string: text)) }
    }
}

@Suite(.timeLimit(.minutes(5))) struct TXTRecordTests {
    @Test func roundTrip() {
        var record = TXTRecord()
        record.set("id", "1234")
        record.set("name", "alice bob")
        record.set("empty", "")
        let parsed = TXTRecord(bytes: record.bytes)
        #expect(parsed == record)
        #expect(parsed["NAME"] == "alice bob")
        #expect(parsed.dictionary == ["id": "1234", "name": "alice bob", "empty": ""])
    }

    @Test func wireFormIsLengthPrefixedStrings() {
        var record = TXTRecord()
        record.set("a", "b")
        record.set("pv", "1")
        #expect(record.bytes == [3, 97, 61, 98, 4, 112, 118, 61, 49])
        #expect(TXTRecord().bytes == [0])
    }

    @Test func malformedInputIsSkipped() {
        // A length running past the end, an empty string, a key-only entry, an entry with an empty key.
        let record = TXTRecord(bytes: [0, 4, 102, 108, 97, 103, 2, 61, 120, 9, 1])
        #expect(record.dictionary == ["flag": ""])
    }

    @Test func entriesThatDoNotFitAreRejected() {
        #expect(TXTRecord.problem(key: "k", value: String(repeating: "v", count: 254)) != nil)
        #expect(TXTRecord.problem(key: "k", value: String(repeating: "v", count: 253)) == nil)
        #expect(TXTRecord.problem(key: "a=b", value: "") != nil)
        #expect(TXTRecord.problem(key: "", value: "x") != nil)
    }
}

@Suite(.timeLimit(.minutes(5))) struct ConfigurationTests {
    @Test func defaultsAreValid() throws {
        _ = try Configuration().validated()
        #expect(Configuration().domain == "local.")
        #expect(Configuration().serviceType == "chirp")
        #expect(!Configuration().peerName.isEmpty)
    }

    @Test func reservedMetadataKeysAreRefused() {
        var configuration = Configuration(serviceType: "chat")
        configuration.metadata = ["id": "mine"]
        #expect(throws: ChirpError.self) { try configuration.validated() }
    }

    @Test func aBurstLingerOutsideZeroTo10msIsRefusedWithItsValue() throws {
        var configuration = Configuration(serviceType: "chat")
        _ = try configuration.validated()  // control: the default passes
        configuration.burstLinger = .zero
        _ = try configuration.validated()  // off
        for refused: Duration in [.microseconds(-1), .milliseconds(11)] {
            configuration.burstLinger = refused
            let error = #expect(throws: ChirpError.self) { try configuration.validated() }
            #expect(error?.code == .invalidConfiguration)
            #expect(error?.description.contains("burstLinger") == true)
        }
    }

    @Test func durationsBecomeNIOTimeAmountsAndSaturateWhereNanosecondsRunOut() {
        #expect(Duration.milliseconds(1500).timeAmount == .milliseconds(1500))
        #expect(Duration.nanoseconds(-7).timeAmount == .nanoseconds(-7))
        // Beyond some 292 years, as a "never" timeout: the longest TimeAmount, not an overflow trap.
        #expect(Duration.seconds(Int64.max).timeAmount == .nanoseconds(.max))
        #expect(Duration.seconds(9_223_372_036).timeAmount == .nanoseconds(9_223_372_036_000_000_000))
        #expect(Duration.seconds(9_223_372_037).timeAmount == .nanoseconds(.max))
        #expect(Duration.seconds(-Int64.max).timeAmount == .nanoseconds(.min))
    }

    @Test func resumeRefusesAnInvalidServiceType() {
        let transceiver = Transceiver(serviceType: "this_is_not_valid")
        #expect(throws: ChirpError.self) { try transceiver.resume() }
        #expect(!transceiver.isRunning)
    }

    @Test func instanceNamesFitDNSLabels() {
        let name = Engine.instanceName(name: String(repeating: "é", count: 60), id: "0123456789")
        #expect(name.utf8.count <= 63)
        #expect(name.hasSuffix(" [01234567]"))
    }
}
