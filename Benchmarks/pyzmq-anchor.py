#!/usr/bin/env python3
"""The pyzmq anchors of `make bench`: the same small JSON messages as Chirp's figures, through ZeroMQ, in the same run.

    pyzmq-anchor.py oneway COUNT RUNS     PUSH/PULL, json.dumps per send, json.loads per receive; msg/s per run
    pyzmq-anchor.py reqrep COUNT RUNS     REQ/REP, json both ways on both sides; median round trip (µs) per run

It starts its peer (the PULL or REP side) as a second process, as Chirp's figures use two processes, over
tcp://127.0.0.1 only. Prints one JSON object on standard output: {"samples": [...], "unit": "..."}.
"""
import json
import multiprocessing
import sys
import time

import zmq

SAMPLE = {"from": "bench-main", "seq": 100000, "text": "quick brown fox", "urgent": False}
HWM = 1_000_000  # ZeroMQ's own queue bound, high enough not to drop (PUSH blocks rather than drops anyway)


def message(seq):
    value = dict(SAMPLE)
    value["seq"] = 100_000 + seq % 900_000
    return value


def pull_side(port, count, runs, ready):
    context = zmq.Context()
    pull = context.socket(zmq.PULL)
    pull.setsockopt(zmq.RCVHWM, HWM)
    pull.bind(f"tcp://127.0.0.1:{port}")
    ack = context.socket(zmq.PUSH)
    ack.connect(f"tcp://127.0.0.1:{port + 1}")
    ready.set()
    for _ in range(runs + 1):  # a warm-up run, then the measured ones
        for _ in range(count):
            json.loads(pull.recv())
        ack.send(b"done")
    pull.close(linger=0)
    ack.close(linger=0)
    context.term()


def rep_side(port, count, runs, ready):
    context = zmq.Context()
    rep = context.socket(zmq.REP)
    rep.bind(f"tcp://127.0.0.1:{port}")
    ready.set()
    for _ in range(200 + runs * count):
        request = json.loads(rep.recv())
        rep.send(json.dumps({"seq": request["seq"], "ok": True, "text": request["text"]}).encode())
    rep.close(linger=0)
    context.term()


def free_port_pair():
    import socket
    while True:
        with socket.socket() as first:
            first.bind(("127.0.0.1", 0))
            port = first.getsockname()[1]
        if port < 65535:
            with socket.socket() as second:
                try:
                    second.bind(("127.0.0.1", port + 1))
                    return port
                except OSError:
                    continue


def oneway(count, runs):
    port = free_port_pair()
    ready = multiprocessing.Event()
    peer = multiprocessing.Process(target=pull_side, args=(port, count, runs, ready), daemon=True)
    context = zmq.Context()
    acks = context.socket(zmq.PULL)
    acks.bind(f"tcp://127.0.0.1:{port + 1}")
    peer.start()
    if not ready.wait(30):
        raise SystemExit("the PULL side did not start")
    push = context.socket(zmq.PUSH)
    push.setsockopt(zmq.SNDHWM, HWM)
    push.connect(f"tcp://127.0.0.1:{port}")
    samples = []
    for run in range(runs + 1):
        start = time.perf_counter()
        for seq in range(count):
            push.send(json.dumps(message(seq)).encode())
        acks.recv()
        if run > 0:
            samples.append(count / (time.perf_counter() - start))
    peer.join(30)
    push.close(linger=0)
    acks.close(linger=0)
    context.term()
    return {"unit": "msg/s", "samples": samples}


def reqrep(count, runs):
    port = free_port_pair()
    ready = multiprocessing.Event()
    peer = multiprocessing.Process(target=rep_side, args=(port, count, runs, ready), daemon=True)
    peer.start()
    if not ready.wait(30):
        raise SystemExit("the REP side did not start")
    context = zmq.Context()
    req = context.socket(zmq.REQ)
    req.connect(f"tcp://127.0.0.1:{port}")

    def round_trip(seq):
        req.send(json.dumps(message(seq)).encode())
        json.loads(req.recv())

    for seq in range(200):
        round_trip(seq)
    samples = []
    for _ in range(runs):
        times = []
        for seq in range(count):
            start = time.perf_counter()
            round_trip(seq)
            times.append((time.perf_counter() - start) * 1e6)
        times.sort()
        samples.append(times[len(times) // 2])
    peer.join(30)
    req.close(linger=0)
    context.term()
    return {"unit": "µs", "samples": samples}


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("oneway", "reqrep"):
        raise SystemExit(__doc__)
    count, runs = int(sys.argv[2]), int(sys.argv[3])
    result = oneway(count, runs) if sys.argv[1] == "oneway" else reqrep(count, runs)
    result["pyzmq"] = zmq.pyzmq_version()
    result["libzmq"] = zmq.zmq_version()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
