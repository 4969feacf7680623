#!/usr/bin/env python3
"""A man in the middle of a pairing, for the pairing tests: it terminates TLS on both sides with identities of its
own and passes every byte on unchanged, as an attacker on the LAN who answered for the app would.

    pairing_relay.py TARGET-PORT SERVER-CERT SERVER-KEY CLIENT-CERT CLIENT-KEY

Listens on 127.0.0.1 (a free port, printed as `port N` on the first line), takes one connection with TLS 1.3 as a
server (showing SERVER-CERT), dials 127.0.0.1:TARGET-PORT with TLS 1.3 as a client (showing CLIENT-CERT), then copies
bytes both ways until either side closes. Prints `relayed N bytes` and exits 0.
"""
import socket
import ssl
import sys
import threading


def main():
    target_port, server_cert, server_key, client_cert, client_key = sys.argv[1:6]

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(60)
    print(f"port {listener.getsockname()[1]}", flush=True)

    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.minimum_version = ssl.TLSVersion.TLSv1_3
    server_context.load_cert_chain(server_cert, server_key)
    server_context.verify_mode = ssl.CERT_NONE  # the dialer's certificate is not needed to fool the app

    client_context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    client_context.minimum_version = ssl.TLSVersion.TLSv1_3
    client_context.check_hostname = False
    client_context.verify_mode = ssl.CERT_NONE  # self-signed, and the relay does not care whose it is
    client_context.load_cert_chain(client_cert, client_key)

    raw, _ = listener.accept()
    inbound = server_context.wrap_socket(raw, server_side=True)
    outbound = client_context.wrap_socket(socket.create_connection(("127.0.0.1", int(target_port)), timeout=60))
    inbound.settimeout(None)
    outbound.settimeout(None)

    total = [0, 0]

    def copy(source, destination, index):
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                destination.sendall(data)
                total[index] += len(data)
        except (OSError, ssl.SSLError):
            pass
        for sock in (source, destination):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    threads = [
        threading.Thread(target=copy, args=(inbound, outbound, 0)),
        threading.Thread(target=copy, args=(outbound, inbound, 1)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(f"relayed {total[0] + total[1]} bytes", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
