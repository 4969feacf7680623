#!/usr/bin/env python3
"""Summarizes a load run of scripts/load/run.sh from the JSON lines its processes printed.

    summarize.py broadcast OUT PEERS HOSTS SENDER_STATUS
    summarize.py many OUT PEERS PER_PROCESS STARTED_AT [LAST_STARTED_AT HOSTS]

Exits 1 when the run failed its checks (see run.sh)."""
import glob
import json
import os
import statistics
import sys


def lines(path):
    out = []
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line.startswith("{"):
                    try:
                        out.append(json.loads(line))
                    except ValueError:
                        pass
    except OSError:
        pass
    return out


def machine():
    try:
        load = open("/proc/loadavg").read().split()[:3]
    except OSError:
        load = ["?"] * 3
    return f"{os.cpu_count()} cores, load average {' '.join(load)}"


def broadcast(out, peers, hosts, sender_status):
    failures = []
    sender = next((l for l in lines(f"{out}/sender.json") if l.get("role") == "sender"), None)
    receivers = []
    for i in range(1, peers + 1):
        mine = [l for l in lines(f"{out}/recv-{i}.json") if l.get("role") == "receiver"]
        if not mine:
            failures.append(f"recv-{i}: no summary (see {out}/recv-{i}.err)")
        receivers.extend(mine)
    if sender is None or "sent" not in sender:
        failures.append(f"sender: no summary (see {out}/sender.err)")
    print(f"{'peer':<9} {'host':<4} {'received':>10} {'lost':>6} {'dup':>5} {'reord':>6} {'msg/s':>9} {'RSS MiB':>8}")
    total_lost = total_dup = total_reorder = 0
    rates = []
    for r in sorted(receivers, key=lambda r: int(r["name"].split("-")[-1]) if r["name"].split("-")[-1].isdigit() else 0):
        lost = r.get("lost")
        total_lost += lost if lost is not None else 0
        total_dup += r["duplicated"]
        total_reorder += r["reordered"]
        rates.append(r["messagesPerSecond"])
        print(f"{r['name']:<9} {r['label']:<4} {r['distinct']:>10} {('?' if lost is None else lost):>6} {r['duplicated']:>5} "
              f"{r['reordered']:>6} {r['messagesPerSecond']:>9.0f} {r['rssKiB'] / 1024:>8.1f}")
        if lost is None:
            failures.append(f"{r['name']}: the sender's end never arrived")
        elif lost or r["duplicated"] or r["reordered"]:
            failures.append(f"{r['name']}: lost {lost}, duplicated {r['duplicated']}, reordered {r['reordered']}")
        if r.get("senderDisconnects"):
            failures.append(f"{r['name']}: the sender disconnected {r['senderDisconnects']} time(s) during the run")
    summary = {"mode": "broadcast", "receivers": peers, "hosts": hosts, "machine": machine(),
               "lost": total_lost, "duplicated": total_dup, "reordered": total_reorder}
    if sender and "sent" in sender:
        skipped = sum(sender["skipped"].values())
        summary.update(sent=sender["sent"], seconds=round(sender["seconds"], 2),
                       broadcastsPerSecond=round(sender["broadcastsPerSecond"]),
                       deliveriesPerSecond=round(sender["deliveriesPerSecond"]),
                       senderCPUCores=round(sender["cpuCores"], 2), senderRSSMiB=round(sender["rssKiB"] / 1024, 1),
                       windowWaits=sender["windowWaits"], skipped=skipped,
                       receiverDisconnects=len(sender["receiverDisconnects"]))
        print(f"sender: {sender['sent']} broadcasts in {sender['seconds']:.1f} s = {sender['broadcastsPerSecond']:.0f} msg/s "
              f"to each of {sender['receivers']} peers, {sender['deliveriesPerSecond']:.0f} deliveries/s in all; "
              f"sender CPU {sender['cpuSeconds']:.1f} s ({sender['cpuCores']:.2f} cores), RSS {sender['rssKiB'] / 1024:.1f} MiB; "
              f"window waits {sender['windowWaits']}, skipped deliveries {skipped}, "
              f"receiver disconnects {len(sender['receiverDisconnects'])}")
        if skipped:
            failures.append(f"sender: broadcast skipped {skipped} deliveries (outbound queue full): {sender['skipped']}")
        if sender["receiverDisconnects"]:
            failures.append(f"sender: receivers disconnected: {', '.join(sender['receiverDisconnects'])}")
        if sender.get("stalled"):
            failures.append("sender: the acknowledgement window stalled")
    if rates:
        summary.update(perPeerMin=round(min(rates)), perPeerMedian=round(statistics.median(rates)))
        print(f"per peer: min {min(rates):.0f}, median {statistics.median(rates):.0f} msg/s; "
              f"lost {total_lost}, duplicated {total_dup}, reordered {total_reorder} (all must be 0); {machine()}")
    if sender_status != 0:
        failures.append(f"sender exited with status {sender_status}")
    summary["ok"] = not failures
    print("LOAD-SUMMARY " + json.dumps(summary, sort_keys=True))
    for f in failures:
        print("FAIL: " + f)
    # What the library logged in the receivers that failed (notice and above: why a connection closed, when it did).
    failed = sorted({f.split(":")[0] for f in failures if f.startswith("recv-")})
    for name in failed:
        try:
            logged = [l.rstrip() for l in open(f"{out}/{name}.err", errors="replace")
                      if "[Chirp" in l and len(l.split()) > 1 and l.split()[1] in ("notice", "warning", "error", "critical")]
        except OSError:
            logged = []
        print(f"{name}'s log ({len(logged)} line(s) from the library{', the last 20' if len(logged) > 20 else ''}):")
        for l in logged[-20:]:
            print("    " + l)
    print("broadcast: " + ("PASS" if not failures else "FAIL"))
    return 0 if not failures else 1


def many(out, peers, per_process, started_at, last_started_at=None, hosts=1):
    processes = peers // per_process
    failures = []
    summaries, fulls, statuses = [], [], []
    for i in range(1, processes + 1):
        ls = lines(f"{out}/mesh-{i}.json")
        s = [l for l in ls if l.get("type") == "summary"]
        f = [l for l in ls if l.get("type") == "full"]
        statuses.extend(l for l in ls if l.get("type") == "status")
        if not s:
            failures.append(f"mesh-{i}: no summary (see {out}/mesh-{i}.err)")
        summaries.extend(s)
        if not f:
            failures.append(f"mesh-{i}: never had {peers - 1} connected peers on every transceiver")
        fulls.extend(f)
    # Timeline: the fewest found / available / connected over all transceivers, in 10 s buckets since the start.
    buckets = {}
    for st in statuses:
        b = int((st["at"] - started_at) // 10) * 10
        for p in st["peers"]:
            cur = buckets.setdefault(b, {})
            cur.setdefault(p["name"], p)  # the first sample of each peer in the bucket
    if buckets:
        print(f"{'t (s)':>6} {'found min/med':>14} {'available min/med':>18} {'connected min/med':>18}  (per transceiver, of {peers - 1})")
        for b in sorted(buckets):
            ps = list(buckets[b].values())
            def mm(key):
                vals = [p[key] for p in ps]
                return f"{min(vals)}/{int(statistics.median(vals))}"
            print(f"{b:>6} {mm('found'):>14} {mm('available'):>18} {mm('connected'):>18}")
    summary = {"mode": "many", "peers": peers, "perProcess": per_process, "processes": processes, "hosts": hosts,
               "machine": machine(), "full": len(fulls)}
    if fulls:
        last = max(f["at"] for f in fulls) - started_at
        complete = len(fulls) == processes
        summary["secondsToFullMesh"] = round(last, 2) if complete else None
        after_last = None
        if last_started_at is not None:
            after_last = max(f["at"] for f in fulls) - last_started_at
            summary["secondsToFullMeshAfterLastStart"] = round(after_last, 2) if complete else None
        print(f"full mesh: {len(fulls)}/{processes} processes; "
              + (f"the last after {last:.2f} s from the first launch"
                 + (f", {after_last:.2f} s after the last launch" if after_last is not None else "")
                 if complete else "not all"))
    # A peer reported connected twice (a duplicate connection, or one dropped and made again) shows as more
    # peerConnected events than peers by the time the mesh was full.
    events = [s.get("connectEventsAtFull") for s in summaries if s.get("connectEventsAtFull") is not None]
    if events and len(events) == len(summaries):
        expected = sum(s["expect"] * s["transceivers"] for s in summaries)
        summary["connectEventsAtFullMesh"] = sum(events)
        print(f"peerConnected events by full mesh: {sum(events)} (one per pair and side: {expected})")
        if sum(events) != expected:
            failures.append(f"{sum(events)} peerConnected events for {expected} connections: a peer was reported "
                            "connected more than once")
    if summaries:
        rss = [s["rssKiB"] / 1024 for s in summaries]
        pss = [s["pssKiB"] / 1024 for s in summaries if s["pssKiB"]]
        before = [s["rssBeforeKiB"] / 1024 for s in summaries]
        fds = [s["openFiles"] for s in summaries]
        summary.update(rssMiBPerProcess=round(statistics.median(rss), 1),
                       rssMiBPerPeer=round(statistics.median(rss) / per_process, 2),
                       pssMiBPerPeer=round(statistics.median(pss) / per_process, 2) if pss else None,
                       pssMiBTotal=round(sum(pss), 1) if pss else None,
                       rssMiBBeforeStart=round(statistics.median(before), 1),
                       openFilesPerProcess=int(statistics.median(fds)),
                       minConnected=min(s["minConnected"] for s in summaries))
        print(f"memory: RSS per process median {statistics.median(rss):.1f} MiB (min {min(rss):.1f}, max {max(rss):.1f}; "
              f"{statistics.median(before):.1f} MiB before the first transceiver started), "
              f"per peer {statistics.median(rss) / per_process:.2f} MiB RSS"
              + (f", {statistics.median(pss) / per_process:.2f} MiB PSS (all {len(pss)} processes: {sum(pss):.0f} MiB PSS)" if pss else "")
              + f"; open files per process {int(statistics.median(fds))}; {machine()}")
    summary["ok"] = not failures
    print("LOAD-SUMMARY " + json.dumps(summary, sort_keys=True))
    for f in failures[:10]:
        print("FAIL: " + f)
    if len(failures) > 10:
        print(f"FAIL: ... and {len(failures) - 10} more")
    print("many: " + ("PASS" if not failures else "FAIL"))
    return 0 if not failures else 1


if __name__ == "__main__":
    mode, out = sys.argv[1], sys.argv[2]
    if mode == "broadcast":
        sys.exit(broadcast(out, int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])))
    last_started = float(sys.argv[6]) if len(sys.argv) > 6 else None
    hosts = int(sys.argv[7]) if len(sys.argv) > 7 else 1
    sys.exit(many(out, int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), last_started, hosts))
