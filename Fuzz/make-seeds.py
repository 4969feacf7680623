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


for target in ("frames", "hello", "txt"):
    shutil.rmtree(os.path.join(ROOT, target), ignore_errors=True)
    os.makedirs(os.path.join(ROOT, target))
frames_seeds()
hello_seeds()
txt_seeds()
