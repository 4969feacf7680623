#!/usr/bin/env python3
"""Writes the seed corpus under Fuzz/corpus/ (committed; rerun only to change the seeds).

Each file is one input in its target's layout (see the comment at the top of Fuzz/Sources/<Target>/<Target>.swift).
libFuzzer's own finds never go here: `make fuzz` keeps them in /fuzz-corpus-tmp (ignored by git).
"""
import json
import os
import shutil
import struct

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
HELLO, REFUSE, MESSAGE, REQUEST, RESPONSE, PING, PONG, GOODBYE = range(1, 9)


def frame(kind, body=b""):
    return struct.pack(">IB", len(body) + 1, kind) + body


def header(length):
    return struct.pack(">I", length)


def message_body(name=b"Chat", payload=b'{"text":"hi"}', flags=0, name_length=None):
    return struct.pack(">BH", flags, len(name) if name_length is None else name_length) + name + payload


def hello_json(**changes):
    hello = {"protocol": 1, "peerID": "peer-a", "name": "Alice", "service": "chat", "metadata": {"room": "x"}}
    hello.update(changes)
    return json.dumps({k: v for k, v in hello.items() if v is not None}, sort_keys=True).encode()


def write(target, name, data):
    with open(os.path.join(ROOT, target, name), "wb") as f:
        f.write(data)


def frames_seeds():
    # byte 0: bits 0-2 maxFrameSize [1, 5, 64, 1024, 16384, 16385, 1 MiB, 64 MiB], bits 3-4 maxHelloSize
    # [16384, 1, 6, 300]; byte 1: chunk-size count (mod 9); then the chunk sizes; then the stream.
    big, small_frames, hello300 = 0x06, 0x03, 0x06 | 3 << 3
    whole = lambda limits, stream: bytes([limits, 0]) + stream
    split = lambda limits, sizes, stream: bytes([limits, len(sizes)] + sizes) + stream
    hello = frame(HELLO, hello_json())
    session = (hello + frame(MESSAGE, message_body()) + frame(REQUEST, struct.pack(">Q", 7) + message_body())
               + frame(RESPONSE, struct.pack(">QB", 7, 0) + message_body(flags=1, payload=b"\x00\x01"))
               + frame(PING, b"12345678") + frame(PONG, b"12345678") + frame(GOODBYE))
    write("frames", "session-whole", whole(big, session))
    write("frames", "session-byte-by-byte", split(big, [1], session))
    write("frames", "session-split-3-7", split(big, [3, 7, 0], session))
    write("frames", "zero-length", whole(big, hello + header(0)))
    write("frames", "zero-length-first", whole(big, header(0)))
    write("frames", "hello-max-300", whole(hello300, frame(HELLO, b"{" + b" " * 297 + b"}")))
    write("frames", "hello-just-over-300", whole(hello300, header(301) + b"\x01{}"))
    write("frames", "hello-just-over-16k", whole(big, header(16385)))
    write("frames", "frame-max-1024", whole(small_frames, frame(HELLO, b"{}") + frame(PING, b"p" * 1023)))
    write("frames", "frame-just-over-1024", whole(small_frames, frame(HELLO, b"{}") + header(1025) + b"\x06"))
    write("frames", "length-max", whole(big, frame(HELLO, b"{}") + header(0xFFFFFFFF)))
    write("frames", "truncated-body", split(big, [2], frame(HELLO, b"{}") + header(10) + b"\x03abcd"))
    write("frames", "truncated-length", whole(big, frame(HELLO, b"{}") + b"\x00\x00"))
    write("frames", "tls-client-hello", whole(big, b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03"))
    write("frames", "http-request", whole(big, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
    write("frames", "limit-1-kind-only", whole(0x00, frame(HELLO) + frame(PING)))
    write("frames", "unknown-kind", whole(big, hello + frame(0x7F, b"future")))
    write("frames", "type-name-bad-utf8", whole(big, hello + frame(MESSAGE, message_body(name=b"\xc3\x28"))))
    write("frames", "type-name-empty", whole(big, hello + frame(MESSAGE, message_body(name=b""))))
    write("frames", "type-name-too-long", whole(big, hello + frame(MESSAGE, message_body(name=b"", name_length=1025))))
    write("frames", "type-name-past-end", whole(big, hello + frame(MESSAGE, message_body(name=b"Ch", name_length=40))))
    write("frames", "request-short", whole(big, hello + frame(REQUEST, b"\x00\x01")))
    write("frames", "response-bad-status", whole(big, hello + frame(RESPONSE, struct.pack(">QB", 1, 9) + message_body())))


def hello_seeds():
    # byte 0 % 3: 0 hello body, 1 refuse body, 2 raw stream; byte 0 / 3: where the stream is split in two reads.
    body = lambda data, split=0: bytes([split * 3]) + data
    write("hello", "valid", body(hello_json()))
    write("hello", "valid-split", body(hello_json(), split=3))
    write("hello", "no-metadata", body(hello_json(metadata=None)))
    write("hello", "other-protocol", body(hello_json(protocol=2)))
    write("hello", "other-service", body(hello_json(service="other")))
    write("hello", "same-peer-id", body(hello_json(peerID="fuzz-local-peer", service="chat")))
    write("hello", "empty-peer-id", body(hello_json(peerID="")))
    write("hello", "long-peer-id", body(hello_json(peerID="p" * 129)))
    write("hello", "wrong-types", body(b'{"protocol":"1","peerID":7,"name":null,"service":[],"metadata":{"a":1}}'))
    write("hello", "not-json", body(b"hello there"))
    write("hello", "empty-body", body(b""))
    write("hello", "deep-nesting", body(b"[" * 600 + b"]" * 600))
    write("hello", "escapes", body(hello_json().replace(b"Alice", b"\\u00e9\\ud83d\\udc26 \\ud800\\u0041\\/\\n\xf0\x9f\x90\xa6")))
    write("hello", "bad-utf8-name", body(hello_json().replace(b"Alice", b"Al\xc3\x28ce")))
    write("hello", "max-body", body(hello_json(name="n" * (16383 - len(hello_json(name=""))))))
    write("hello", "just-over-max-body", body(hello_json(name="n" * (16384 - len(hello_json(name=""))))))
    write("hello", "refuse-reason", bytes([1]) + "service type mismatch: \u00e9".encode())
    write("hello", "refuse-bad-utf8", bytes([1]) + b"\xff\xfe reason")
    write("hello", "raw-hello", bytes([2]) + frame(HELLO, hello_json()))
    write("hello", "raw-message-first", bytes([2]) + frame(MESSAGE, message_body()))
    write("hello", "raw-tls", bytes([2]) + b"\x16\x03\x01\x00\xa5\x01")
    write("hello", "raw-zero-length", bytes([2]) + header(0))
    write("hello", "raw-truncated", bytes([2 + 3 * 2]) + frame(HELLO, hello_json())[:-5])


def txt_seeds():
    entry = lambda data: bytes([len(data)]) + data
    write("txt", "chirp-peer", entry(b"id=0123456789abcdef") + entry(b"name=Alice") + entry(b"pv=1") + entry(b"room=x"))
    write("txt", "empty", b"\x00")
    write("txt", "nothing", b"")
    write("txt", "length-past-end", entry(b"id=1") + b"\x20abc")
    write("txt", "no-equals", entry(b"flag") + entry(b"name="))
    write("txt", "empty-key", entry(b"=value") + entry(b"id=2"))
    write("txt", "duplicate-keys", entry(b"ID=first") + entry(b"id=second") + entry(b"Name=x"))
    write("txt", "bad-utf8", entry(b"na\xffme=\xc3\x28") + entry(b"k=\xed\xa0\x80"))
    write("txt", "entry-255", entry(b"k=" + b"v" * 253))
    write("txt", "value-with-equals", entry(b"k=a=b=c"))
    write("txt", "control-key", entry(b"\x01key=v") + entry(b"sp ace=v"))


def logs_seeds():
    # byte 0: options (bit 0 colours, bit 1 host); then a batch: u8 version 1, u64 subscription, u32 count, entries.
    # An entry (RecordCoding): u32 length, then u64 sequence, i64 time (ns), u8 level, u8 flags (bit 0 HTTP),
    # str label, message, source, file, function, u64 line, metadata, [exchange]; str = u32 length + UTF-8.
    s = lambda text: struct.pack(">I", len(text)) + text
    def metadata(pairs):
        return struct.pack(">I", len(pairs)) + b"".join(s(k) + v for k, v in pairs)
    string = lambda text: b"\x00" + s(text)
    array = lambda values: b"\x01" + struct.pack(">I", len(values)) + b"".join(values)
    dictionary = lambda pairs: b"\x02" + metadata(pairs)
    def headers(pairs):
        return struct.pack(">I", len(pairs)) + b"".join(s(n) + s(v) for n, v in pairs)
    body = lambda data, total=None: b"\x01" + struct.pack(">Q", len(data) if total is None else total) + s(data)
    def exchange(method=b"POST", url=b"https://api.example.com/items?id=7", status=201, error=None,
                 request=None, response=None):
        return (s(method) + s(url) + headers([(b"Content-Type", b"application/json"), (b"Authorization", b"<redacted>")])
                + (request if request is not None else body(b'{"name":"milk","tags":["a","b"],"n":1.5e3}'))
                + struct.pack(">i", status) + headers([(b"content-type", b"application/json")])
                + (response if response is not None else body(b'{"id":7}'))
                + struct.pack(">qq", 1_764_000_000_000_000_000, 12_500_000)
                + (b"\x01" + s(error) if error is not None else b"\x00"))
    def entry(seq=1, time=1_764_000_000_123_000_000, level=2, label=b"orders.api", message=b"order placed",
              meta=None, http=None, source=b"orders", file=b"Sources/App/Orders.swift", function=b"place(_:)", line=42):
        inner = (struct.pack(">QqBB", seq, time, level, 1 if http is not None else 0) + s(label) + s(message)
                 + s(source) + s(file) + s(function) + struct.pack(">Q", line)
                 + metadata(meta if meta is not None else [(b"id", string(b"17"))]) + (http or b""))
        return struct.pack(">I", len(inner)) + inner
    def batch(entries, options=0, subscription=7):
        return bytes([options]) + struct.pack(">BQI", 1, subscription, len(entries)) + b"".join(entries)
    write("batches", "empty", batch([]))
    write("batches", "one-record", batch([entry()]))
    write("batches", "one-record-colour-host", batch([entry()], options=3))
    write("batches", "two-records", batch([entry(), entry(seq=2, level=5, message=b"payment failed")]))
    write("batches", "nested-metadata", batch([entry(meta=[
        (b"user", dictionary([(b"id", string(b"9")), (b"roles", array([string(b"admin"), string(b"ops")]))])),
        (b"deep", dictionary([(b"a", dictionary([(b"b", dictionary([(b"c", array([array([string(b"x")])]))]))]))])),
        (b"empty", array([]))])]))
    write("batches", "http-exchange", batch([entry(message=b"POST /items 201", http=exchange())], options=1))
    write("batches", "http-error-no-status", batch([entry(http=exchange(status=-1, error=b"timed out\nsecond line"))]))
    write("batches", "http-truncated-binary-body", batch([entry(http=exchange(
        request=b"\x00", response=body(b"\x89PNG\r\n\x1a\n", total=1 << 20)))]))
    write("batches", "controls", batch([entry(
        label=b"l\x1b]0;title\x07", message=b"line\nforged 12:00:00 info\x1b[31m red \xe2\x80\xae rtl \xc2\x9b",
        meta=[(b"k\r", string(b"v\tw\x7f"))], http=exchange(url=b"https://x/\x1b[2J", error=b"\xe2\x80\xa8"))],
        options=1))
    write("batches", "bad-utf8", batch([entry(message=b"\xff\xfe\xc3\x28 \xed\xa0\x80", label=b"\xc0\xaf")]))
    write("batches", "name-over-limit", batch([entry(label=b"n" * 1025, source=b"\xc3\xa9" * 600)]))
    write("batches", "extreme-times", batch([entry(time=-(1 << 63), line=(1 << 64) - 1, seq=(1 << 64) - 1),
                                          entry(time=(1 << 63) - 1, level=6)]))
    write("batches", "unknown-level", batch([entry(level=7)]))
    write("batches", "damaged-middle-record", batch([entry(seq=1), entry(seq=2, level=9), entry(seq=3)]))
    write("batches", "short-entry", batch([entry(seq=1), struct.pack(">I", 3) + b"abc", entry(seq=3)]))
    write("batches", "count-lies", bytes([0]) + struct.pack(">BQI", 1, 7, 1000) + entry())
    write("batches", "stray-bytes", batch([entry()]) + b"\x00")
    write("batches", "version-2", bytes([0]) + struct.pack(">BQI", 2, 7, 0))


def json_seeds():
    # byte 0: the type (0 Flat, 1 Numbers, 2 Optionals, 3 Outer, 4 [Int], 5 [String?], 6 WithLevel, 7 [String: Int],
    # 8 WithDate); then the JSON document.
    def doc(kind, name, text):
        write("json", name, bytes([kind]) + text.encode())
    doc(0, "flat", '{"seq":17,"from":"alice","text":"quick brown fox","urgent":false}')
    doc(0, "flat-escapes", '{"seq":-1,"from":"a\\u00e9\\ud83d\\ude00\\n\\"","text":"\\/\\b\\f\\t\\r","urgent":true}')
    doc(0, "flat-reordered-extra", '{ "urgent" : true , "text":"", "extra":[1,{"x":null}], "from":"b", "seq":0 }')
    doc(0, "flat-duplicate-key", '{"seq":1,"seq":2,"from":"a","text":"b","urgent":false}')
    doc(0, "flat-escaped-key", '{"s\\u0065q":1,"from":"a","text":"b","urgent":false}')
    doc(0, "flat-bad-utf8", '{"seq":1,"from":"\xff","text":"b","urgent":false}')
    doc(1, "numbers", '{"int":-9223372036854775808,"int8":-128,"int16":32767,"int32":-2147483648,'
        '"int64":9223372036854775807,"uint":18446744073709551615,"uint8":255,"uint16":65535,"uint32":4294967295,'
        '"uint64":18446744073709551615,"double":-1.7976931348623157e308,"float":3.4028235e38}')
    doc(1, "numbers-edges", '{"int":1e2,"int8":-0,"int16":0.0,"int32":1E+1,"int64":-0e0,"uint":0,"uint8":1,'
        '"uint16":2,"uint32":3,"uint64":4,"double":4.9e-324,"float":1e-46}')
    doc(2, "optionals-null", '{"name":null,"count":null,"flag":null,"values":null}')
    doc(2, "optionals-missing", '{}')
    doc(2, "optionals-set", '{"name":"x","count":3,"flag":true,"values":[1,2,3]}')
    doc(3, "outer", '{"inner":{"id":1,"tags":["a"]},"list":[{"id":2,"tags":[]},{"id":3,"tags":["b","c"]}],'
        '"matrix":[[1.5,-2],[],[3e10]],"optionalInner":null,"maybes":[1,null,3]}')
    doc(4, "ints", '[1,-2,3,9007199254740993]')
    doc(4, "ints-deep-garbage", '[' * 64 + ']' * 64)
    doc(5, "strings", '["a",null,"\\u0000",""]')
    doc(6, "level", '{"level":"low","levels":["high","low"]}')
    doc(6, "level-unknown", '{"level":"medium","levels":[]}')
    doc(7, "dictionary", '{"a":1,"b":2,"a":3}')
    doc(8, "date", '{"id":1,"at":"2026-11-26T08:00:00Z"}')


for target in ("frames", "hello", "txt", "batches", "json"):
    shutil.rmtree(os.path.join(ROOT, target), ignore_errors=True)
    os.makedirs(os.path.join(ROOT, target))
frames_seeds()
hello_seeds()
txt_seeds()
logs_seeds()
json_seeds()
