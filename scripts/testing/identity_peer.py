#!/usr/bin/env python3
"""A Chirp peer with a device identity, written from Docs/Protocol.md alone with Python's standard library: it
dials a Chirp transceiver with mutual TLS 1.3 (its certificate and key in PEM), checks the fingerprint of the
certificate it is shown against the one it was told (the readable form, computed here from the certificate's
SubjectPublicKeyInfo), says hello, reads the transceiver's hello and sends one message.

    identity_peer.py HOST PORT CERT KEY EXPECTED-FINGERPRINT SERVICE NAME TYPE-NAME JSON

Prints one line per step (`tls TLSv1.3`, `fingerprint ok chirp:...`, `hello from NAME`, `sent`), or `refused: ...`
when the transceiver refuses it; exits 0 once the message is sent, 2 on a refusal, 1 on anything else.
"""
import base64
import hashlib
import json
import socket
import ssl
import struct
import sys
import uuid

ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"


def der_element(data, offset):
    """(tag, start of content, end of content) of the DER element at `offset`."""
    tag = data[offset]
    length = data[offset + 1]
    offset += 2
    if length & 0x80:
        count = length & 0x7F
        length = int.from_bytes(data[offset:offset + count], "big")
        offset += count
    return tag, offset, offset + length


def spki(certificate):
    """The DER bytes of a certificate's SubjectPublicKeyInfo (RFC 5280: Certificate > TBSCertificate > 7th field, or
    6th without the optional [0] version)."""
    _, start, _ = der_element(certificate, 0)           # Certificate SEQUENCE
    _, offset, end = der_element(certificate, start)    # TBSCertificate SEQUENCE
    fields = []
    while offset < end:
        tag, content, after = der_element(certificate, offset)
        fields.append((tag, offset, after))
        offset = after
    if fields[0][0] == 0xA0:                            # [0] version
        fields = fields[1:]
    # serialNumber, signature, issuer, validity, subject, subjectPublicKeyInfo
    _, first, after = fields[5]
    return certificate[first:after]


def readable(digest):
    """Docs/Protocol.md section 2: `chirp:`, base32 of the 32 bytes (no padding), a Luhn mod 32 check character, in
    lower case, in groups of 4 joined by `-`."""
    data = base64.b32encode(digest).decode().rstrip("=")
    factor, total = 2, 0
    for character in reversed(data):
        addend = factor * ALPHABET.index(character)
        factor = 1 if factor == 2 else 2
        total += addend // 32 + addend % 32
    check = ALPHABET[(32 - total % 32) % 32]
    text = (data + check).lower()
    return "chirp:" + "-".join(text[i:i + 4] for i in range(0, len(text), 4))


def frame(kind, body):
    return struct.pack(">IB", len(body) + 1, kind) + body


def read_frame(stream):
    header = read_exactly(stream, 5)
    length, kind = struct.unpack(">IB", header)
    return kind, read_exactly(stream, length - 1)


def read_exactly(stream, count):
    data = b""
    while len(data) < count:
        chunk = stream.recv(count - len(data))
        if not chunk:
            raise EOFError("the connection closed")
        data += chunk
    return data


def main():
    host, port, cert, key, expected, service, name, type_name, payload = sys.argv[1:10]
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE    # no certificate authority: the fingerprint is checked below
    context.load_cert_chain(cert, key)
    with socket.create_connection((host, int(port)), timeout=10) as raw:
        with context.wrap_socket(raw) as stream:
            print("tls", stream.version(), flush=True)
            shown = readable(hashlib.sha256(spki(stream.getpeercert(binary_form=True))).digest())
            if shown != expected:
                print("fingerprint mismatch", shown, flush=True)
                return 1
            print("fingerprint ok", shown, flush=True)
            hello = {"protocol": 1, "peerID": str(uuid.uuid4()), "name": name, "service": service, "role": "tool"}
            stream.sendall(frame(0x01, json.dumps(hello).encode()))
            kind, body = read_frame(stream)
            if kind == 0x02:
                print("refused:", body.decode(errors="replace"), flush=True)
                return 2
            if kind != 0x01:
                print("unexpected first frame", kind, flush=True)
                return 1
            print("hello from", json.loads(body)["name"], flush=True)
            name_bytes = type_name.encode()
            body = bytes([0]) + struct.pack(">H", len(name_bytes)) + name_bytes + payload.encode()
            stream.sendall(frame(0x03, body))
            print("sent", flush=True)
            # Wait for the transceiver to close or to send anything more, so the message is read before we go.
            stream.settimeout(2)
            try:
                read_frame(stream)
            except (EOFError, socket.timeout, ssl.SSLError, OSError):
                pass
            return 0


if __name__ == "__main__":
    sys.exit(main())
