#!/usr/bin/env python3
"""A stand-in for `chirp-console`'s HTTP server, for developing and testing the web page.

Python 3 standard library only. It serves the page's files (index.html, console.css,
console.js and the modules it imports) from --resources with the console's
Content-Security-Policy, and the console's JSON API over generated data:

  GET /api/sources, /api/records, /api/endpoints, /api/services, /api/peers,
  GET /api/stream (Server-Sent Events: `records` and `sources` events).

The data: three sources, about 2000 records of every level, HTTP exchanges (a JSON
POST /orders, a 500, one that failed without a response, 404s, redirects), one record
whose message and label are HTML markup (to prove the page renders them as text), and
new records every second or so (--rate per second).

    python3 mock_console.py --port 0 --resources ../../Sources/ChirpConsole/Resources

The first line printed is "listening on http://127.0.0.1:PORT". With --token T every
/api/ call needs "Authorization: Bearer T" (the stream: ?token=T, or the header).
"""

import argparse
import datetime as dt
import json
import os
import random
import re
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'")

LEVELS = ["trace", "debug", "info", "notice", "warning", "error", "critical"]

HOSTILE_MESSAGE = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'
HOSTILE_LABEL = "<b>bold</b>"

STATIC = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/index.html": ("index.html", "text/html; charset=utf-8"),
    "/assets/console.css": ("console.css", "text/css; charset=utf-8"),
}


def add_modules(resources):
    """Serves the page's script modules (every .js file in the resources, by its own name only), as the console
    serves the ones it lists."""
    for name in sorted(os.listdir(resources)):
        if re.fullmatch(r"[\w-]+\.js", name):
            STATIC["/assets/" + name] = (name, "text/javascript; charset=utf-8")


class BadRequest(Exception):
    pass


def iso(t):
    """Seconds since the epoch -> ISO 8601 UTC with milliseconds and a Z."""
    d = dt.datetime.fromtimestamp(t, tz=dt.timezone.utc)
    return d.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (d.microsecond // 1000)


def parse_iso(text, name):
    try:
        d = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise BadRequest("%s: not an ISO 8601 time: %r" % (name, text))
    if d.tzinfo is None:
        d = d.replace(tzinfo=dt.timezone.utc)
    return d.timestamp()


# --------------------------------------------------------------------------- data


class Store:
    """The records (ids 1, 2, 3, ... so that id - 1 is the index) and the sources."""

    def __init__(self, initial, seed=7):
        self.lock = threading.Lock()
        self.rng = random.Random(seed)
        self.records = []
        self.times = []  # record time as epoch seconds, parallel to records
        now = time.time()
        self.sources = [
            {"id": "logdemo-alpha-1234", "app": "logdemo", "host": "alpha.local", "pid": 1234,
             "live": True, "records": 0, "lost": 0},
            # A source with a device identity the console trusts (it follows it with its own).
            {"id": "orders-api-beta-2001", "app": "orders-api", "host": "beta.local", "pid": 2001,
             "live": True, "records": 0, "lost": 0,
             "fingerprint": TRUSTED_FINGERPRINT, "trusted": True},
            # One whose device the console does not trust, with markup for a fingerprint: the page shows it as text.
            {"id": "worker-gamma-3100", "app": "worker", "host": "gamma.local", "pid": 3100,
             "live": False, "records": 0, "lost": 12,
             "fingerprint": HOSTILE_FINGERPRINT, "trusted": False},
        ]
        for s in self.sources:
            s["firstSeen"] = None
            s["lastSeen"] = None
        self.sequence = {s["id"]: 0 for s in self.sources}
        self.sources_version = 0
        start = now - 30 * 60
        step = (30 * 60 - 5) / max(initial, 1)
        hostile_at = max(1, initial - 120)
        special = {  # index -> kind, so the interesting exchanges exist whatever the seed
            max(1, initial - 400): "orders",
            max(1, initial - 300): "checkout500",
            max(1, initial - 250): "failed",
            max(1, initial - 60): "orders",
        }
        for i in range(1, initial + 1):
            t = start + i * step
            if i == hostile_at:
                self._add_hostile(t)
            elif i in special:
                self._add_http(t, special[i])
            else:  # the source that went away logged only in the first half
                self._add_random(t, allow_lost_source=i < initial // 2)

    # -- generation

    def _source(self, allow_lost_source):
        pool = self.sources if allow_lost_source else self.sources[:2]
        return self.rng.choice(pool)

    def _append(self, t, source, level, label, message, metadata, http=None,
                file="LogDemo.swift", function="run()", line=None):
        rid = len(self.records) + 1
        self.sequence[source["id"]] += 1
        rec = {
            "id": rid, "source": source["id"], "sequence": self.sequence[source["id"]],
            "time": iso(t), "level": level, "label": label, "message": message,
            "metadata": metadata, "app": source["app"], "host": source["host"],
            "pid": source["pid"], "file": file, "function": function,
            "line": line if line is not None else self.rng.randint(10, 400), "http": http,
        }
        self.records.append(rec)
        self.times.append(t)
        source["records"] += 1
        source["firstSeen"] = source["firstSeen"] or rec["time"]
        source["lastSeen"] = rec["time"]
        self.sources_version += 1
        return rec

    def _add_hostile(self, t):
        self._append(t, self.sources[0], "warning", HOSTILE_LABEL, HOSTILE_MESSAGE,
                     {"<i>key</i>": "<script>window.__pwned=4</script>", "note": "markup must render as text"})

    def _add_random(self, t, allow_lost_source=False):
        r = self.rng
        if r.random() < 0.12:
            kinds = ["items", "orders", "health", "missing", "old", "checkout", "slow"]
            return self._add_http(t, r.choices(kinds, weights=[50, 14, 10, 6, 5, 8, 2])[0])
        level = r.choices(LEVELS, weights=[8, 14, 40, 8, 14, 12, 4])[0]
        n = r.randint(1000, 1999)
        name = r.choice(["Zoë", "Ana", "Jürgen", "李雷", "Omar", "Priya"])
        ms = r.randint(3, 900)
        templates = {
            "trace": [("demo.cache", "cache probe key=item:%d" % n), ("demo.loop", "tick %d" % n)],
            "debug": [("demo.cache", "loaded %d items from cache" % (n % 97)),
                      ("db.pool", "query took %d ms" % ms)],
            "info": [("demo.orders", "order placed by %s" % name),
                     ("demo.orders", "order %d shipped" % n),
                     ("auth", "user %s signed in" % name),
                     ("demo.inventory", "inventory synced: %d items" % (n % 300))],
            "notice": [("config", "config reloaded"), ("peers", "new peer discovered: %s" % name)],
            "warning": [("db.pool", "slow query: %d ms" % ms),
                        ("demo.orders", "retrying order %d (attempt 2)" % n)],
            "error": [("demo.orders", "order %d payment failed: card declined" % n),
                      ("db.pool", "database connection lost")],
            "critical": [("storage", "out of disk space on /var"),
                         ("demo.orders", "order pipeline halted")],
        }
        label, message = r.choice(templates[level])
        metadata = {}
        if "order" in message:
            metadata["order"] = str(n)
            metadata["items"] = ["item:%d" % r.randint(1, 9) for _ in range(r.randint(1, 3))]
        if r.random() < 0.3:
            metadata["nested"] = {"k": "v", "attempt": r.randint(1, 3)}
        if r.random() < 0.05:
            message += "\nsecond line of a multi-line message\n\tat frame 2"
        return self._append(t, self._source(allow_lost_source), level, label, message, metadata or None)

    def _add_http(self, t, kind):
        r = self.rng
        host = "127.0.0.1:8080"
        req_headers = [["accept", "application/json"], ["user-agent", "logdemo/1.0"]]
        req_body = None
        status = 200
        error = None
        resp_body = None
        resp_headers = [["content-type", "application/json"], ["server", "SwiftNIO"]]
        duration = r.uniform(0.002, 0.060)
        method = "GET"
        if kind == "items":
            path = "/items/%d" % r.randint(1, 9)
            status = r.choice([200, 200, 200, 200, 304])
            resp_body = json.dumps({"id": int(path.rsplit("/", 1)[1]), "name": "Widget", "price": 9.5})
        elif kind == "orders":
            method, path, status = "POST", "/orders", 201
            req_headers += [["content-type", "application/json"], ["authorization", "<redacted>"]]
            req_body = json.dumps({"customer": "Zoë", "items": [{"sku": "item:1", "qty": 2},
                                                                {"sku": "item:7", "qty": 1}],
                                   "note": "leave at the door"}, ensure_ascii=False)
            resp_body = json.dumps({"order": r.randint(1000, 1999), "status": "placed"})
        elif kind == "health":
            path = "/health"
            resp_headers = [["content-type", "text/plain"]]
            resp_body = "ok"
        elif kind == "missing":
            path, status = "/missing", 404
            resp_body = json.dumps({"error": "not found"})
        elif kind == "old":
            path, status = "/old", 302
            resp_headers = [["location", "/new"]]
        elif kind == "checkout500":
            method, path, status = "POST", "/checkout", 500
            req_headers += [["content-type", "application/json"]]
            req_body = json.dumps({"cart": 77})
            resp_body = "Internal Server Error: <html>upstream timeout</html> " + "x" * 200
        elif kind == "checkout":
            method, path = "POST", "/checkout"
            status = r.choice([200, 200, 500])
            req_body = json.dumps({"cart": r.randint(1, 99)})
            resp_body = json.dumps({"ok": status == 200})
        else:  # "failed" or "slow": no response at all
            path, status, error = "/slow", None, "connection refused (ECONNREFUSED)"
            resp_headers = []
            duration = r.uniform(0.5, 2.0)
        truncated = len(resp_body or "") > 120
        shown = resp_body[:120] if truncated else resp_body
        http = {
            "method": method, "url": "http://%s%s" % (host, path), "host": host, "path": path,
            "status": status, "duration": round(duration, 4), "error": error,
            "requestHeaders": req_headers, "responseHeaders": resp_headers,
            "requestBody": req_body, "requestBodyBytes": len((req_body or "").encode()),
            "requestBodyTruncated": False,
            "responseBody": shown, "responseBodyBytes": len((resp_body or "").encode()),
            "responseBodyTruncated": truncated,
        }
        if status is None:
            level, message = "error", "%s %s failed: %s" % (method, path, error)
        elif status >= 500:
            level, message = "error", "%s %s -> %d" % (method, path, status)
        elif status >= 400:
            level, message = "warning", "%s %s -> %d" % (method, path, status)
        else:
            level, message = "info", "%s %s -> %d" % (method, path, status)
        source = self.sources[0] if kind in ("orders", "checkout500", "failed") else self._source(False)
        return self._append(t, source, level, "http.client", message,
                            {"durationMs": round(duration * 1000, 1)}, http=http,
                            file="URLSessionCapture.swift", function="record(_:)")

    def add_live(self, count):
        with self.lock:
            now = time.time()
            for _ in range(count):
                self._add_random(now)

    # -- queries

    def snapshot_sources(self):
        with self.lock:
            return [dict(s) for s in self.sources], self.sources_version

    def query(self, f, limit=200, before=None, after=None):
        """Records matching filter f: the latest `limit`, or those just before/after an id."""
        with self.lock:
            n = len(self.records)
            out = []
            more = False
            if after is not None:
                i = max(0, min(after, n))  # index of the first record with id > after
                while i < n:
                    rec = self.records[i]
                    if f(rec, self.times[i]):
                        if len(out) == limit:
                            more = True
                            break
                        out.append(rec)
                    i += 1
                return out, more
            i = n - 1 if before is None else min(before - 2, n - 1)
            while i >= 0:
                rec = self.records[i]
                if f(rec, self.times[i]):
                    if len(out) == limit:
                        more = True
                        break
                    out.append(rec)
                i -= 1
            out.reverse()
            return out, more

    def matching_all(self, f):
        with self.lock:
            return [r for i, r in enumerate(self.records) if f(r, self.times[i])]

    def last_id(self):
        with self.lock:
            return len(self.records)


def one(params, name):
    v = params.get(name)
    return v[-1] if v else ""


def build_filter(params):
    """Query parameters -> predicate(record, epoch_seconds). Raises BadRequest."""
    tests = []
    app, host, pid = one(params, "app"), one(params, "host"), one(params, "pid")
    if app:
        tests.append(lambda r, t: r["app"] == app)
    if host:
        tests.append(lambda r, t: r["host"] == host)
    if pid:
        tests.append(lambda r, t: str(r["pid"]) == pid)
    level = one(params, "level")
    if level:
        if level not in LEVELS:
            raise BadRequest("level: unknown level %r" % level)
        lo = LEVELS.index(level)
        tests.append(lambda r, t: LEVELS.index(r["level"]) >= lo)
    label = one(params, "label")
    if label:
        tests.append(lambda r, t: r["label"] == label)
    q = one(params, "q")
    if q:
        words = [w.lower() for w in q.split()]
        tests.append(lambda r, t: all(w in (r["message"] + " " + r["label"]).lower() for w in words))
    regex = one(params, "regex")
    if regex:
        try:
            rx = re.compile(regex)
        except re.error as e:
            raise BadRequest("regex: %s" % e)
        tests.append(lambda r, t: rx.search(r["message"]) is not None)
    frm, to = one(params, "from"), one(params, "to")
    if frm:
        t0 = parse_iso(frm, "from")
        tests.append(lambda r, t: t >= t0)
    if to:
        t1 = parse_iso(to, "to")
        tests.append(lambda r, t: t < t1)
    if one(params, "http") in ("1", "true"):
        tests.append(lambda r, t: r["http"] is not None)
    method = one(params, "method").upper()
    if method:
        tests.append(lambda r, t: r["http"] is not None and r["http"]["method"] == method)
    path = one(params, "path")
    if path:
        tests.append(lambda r, t: r["http"] is not None and r["http"]["path"] == path)
    status = one(params, "status").lower()
    if status:
        m = re.fullmatch(r"([1-5])xx", status)
        if m:
            cls = int(m.group(1))
            tests.append(lambda r, t: r["http"] is not None and r["http"]["status"] is not None
                         and r["http"]["status"] // 100 == cls)
        elif re.fullmatch(r"[1-5][0-9][0-9]", status):
            code = int(status)
            tests.append(lambda r, t: r["http"] is not None and r["http"]["status"] == code)
        elif status in ("failed", "err"):
            tests.append(lambda r, t: r["http"] is not None and r["http"]["status"] is None)
        else:
            raise BadRequest("status: expected e.g. 5xx or 404, got %r" % status)
    return lambda r, t: all(test(r, t) for test in tests)


def int_param(params, name, default=None, lo=None, hi=None):
    v = one(params, name)
    if v == "":
        return default
    try:
        n = int(v)
    except ValueError:
        raise BadRequest("%s: not an integer: %r" % (name, v))
    if lo is not None and n < lo:
        raise BadRequest("%s: must be at least %d" % (name, lo))
    if hi is not None and n > hi:
        n = hi
    return n


def percentile(sorted_values, p):
    if not sorted_values:
        return None
    k = max(0, min(len(sorted_values) - 1, int(round(p / 100.0 * len(sorted_values) + 0.5)) - 1))
    return round(sorted_values[k], 2)


SERVICES = ["_chirp._tcp", "_chirp-logs._tcp", "_chirp-console._tcp"]
# Device fingerprints (the API's full form): one the console trusts, and markup where one would be.
TRUSTED_FINGERPRINT = "chirp:4oym-iquy-7qob-jgx3-6tej-s35z-eqt2-4qpe-msnz-gtfe-swmr-w6cs-xbkq-l"
HOSTILE_FINGERPRINT = '<img src=x onerror="window.__pwned=6">'

PEERS = {
    "_chirp._tcp": [
        {"name": "logdemo", "id": "6f1c9a2e-alpha", "host": "alpha.local",
         "addresses": ["127.0.0.1:5000", "[::1]:5000"], "metadata": {"version": "1.4.0", "role": "demo"},
         "connected": True},
        # With a device identity (TXT sec=id, fp) the console trusts.
        {"name": "orders-api", "id": "b07d44c1-beta", "host": "beta.local",
         "addresses": ["127.0.0.1:5001"], "metadata": {"version": "2.0.1"}, "connected": False,
         "fingerprint": TRUSTED_FINGERPRINT, "trusted": True},
        {"name": '<img src=x onerror="window.__pwned=3">', "id": "<b>id</b>", "host": "evil.local",
         "addresses": ["127.0.0.1:5002"], "metadata": {"<i>k</i>": "<script>window.__pwned=5</script>"},
         "connected": False},
    ],
    "_chirp-logs._tcp": [
        {"name": "logdemo", "id": "6f1c9a2e-alpha-logs", "host": "alpha.local",
         "addresses": ["127.0.0.1:5100"], "metadata": {"stream": "logs"}, "connected": True},
    ],
}


# --------------------------------------------------------------------------- HTTP


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "chirp-console-mock/1.0"

    # set on the class by main()
    store = None
    resources = None
    token = None
    verbose = False
    stopping = None

    def log_message(self, fmt, *args):
        if self.verbose:
            sys.stderr.write("%s %s\n" % (self.address_string(), fmt % args))

    def send_common_headers(self):
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-store")

    def send_bytes(self, code, body, content_type):
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_common_headers()
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def send_json(self, code, obj):
        self.send_bytes(code, json.dumps(obj, ensure_ascii=False).encode("utf-8"),
                        "application/json; charset=utf-8")

    def authorized(self, params, allow_query):
        if not self.token:
            return True
        if self.headers.get("Authorization", "") == "Bearer " + self.token:
            return True
        return allow_query and one(params, "token") == self.token

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        parts = urlsplit(self.path)
        params = parse_qs(parts.query, keep_blank_values=True)
        path = parts.path
        try:
            if path in STATIC:
                name, ctype = STATIC[path]
                with open(os.path.join(self.resources, name), "rb") as fh:
                    return self.send_bytes(200, fh.read(), ctype)
            if not path.startswith("/api/"):
                return self.send_json(404, {"error": "not found: %s" % path})
            if not self.authorized(params, allow_query=(path == "/api/stream")):
                return self.send_json(401, {"error": "missing or wrong token"})
            route = {
                "/api/sources": self.api_sources,
                "/api/records": self.api_records,
                "/api/endpoints": self.api_endpoints,
                "/api/services": self.api_services,
                "/api/peers": self.api_peers,
                "/api/stream": self.api_stream,
            }.get(path)
            if route is None:
                return self.send_json(404, {"error": "no such API: %s" % path})
            route(params)
        except BadRequest as e:
            self.send_json(400, {"error": str(e)})
        except (BrokenPipeError, ConnectionResetError):
            pass

    def api_sources(self, params):
        sources, _ = self.store.snapshot_sources()
        self.send_json(200, {"sources": sources})

    def api_records(self, params):
        f = build_filter(params)
        limit = int_param(params, "limit", 200, lo=1, hi=1000)
        before = int_param(params, "before", None, lo=0)
        after = int_param(params, "after", None, lo=0)
        if before is not None and after is not None:
            raise BadRequest("before and after: give one of them")
        records, more = self.store.query(f, limit=limit, before=before, after=after)
        self.send_json(200, {"records": records, "hasMore": more})

    def api_endpoints(self, params):
        f = build_filter(params)
        groups = {}
        for r in self.store.matching_all(lambda r, t: r["http"] is not None and f(r, t)):
            h = r["http"]
            g = groups.setdefault((h["method"], h["host"], h["path"]), [])
            g.append(h)
        out = []
        for (method, host, path), hs in groups.items():
            durations = sorted(h["duration"] * 1000 for h in hs)
            errors = sum(1 for h in hs if h["status"] is None or h["status"] >= 400)
            out.append({"method": method, "host": host, "path": path, "count": len(hs),
                        "errors": errors, "errorRate": round(errors / len(hs), 4),
                        "p50": percentile(durations, 50), "p90": percentile(durations, 90),
                        "p99": percentile(durations, 99)})
        out.sort(key=lambda e: (-e["count"], e["path"]))
        self.send_json(200, {"endpoints": out})

    def api_services(self, params):
        self.send_json(200, {"services": SERVICES})

    def api_peers(self, params):
        service = one(params, "service") or "_chirp._tcp"
        self.send_json(200, {"service": service, "peers": PEERS.get(service, [])})

    def api_stream(self, params):
        f = build_filter(params)
        after = int_param(params, "after", None, lo=0)
        if after is None:
            after = self.store.last_id()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Connection", "close")
        self.send_common_headers()
        self.end_headers()
        self.close_connection = True
        self.wfile.write(b"retry: 1000\n: connected\n\n")
        self.wfile.flush()
        last_ping = time.time()
        sources_version, sources_sent = None, 0.0
        while not self.stopping.is_set():
            end = self.store.last_id()
            records, more = self.store.query(f, limit=1000, after=after)
            if records:
                after = records[-1]["id"]
                self.send_event("records", {"records": records})
            elif not more:
                after = max(after, end)  # nothing matched up to `end`: skip it next time
            sources, version = self.store.snapshot_sources()
            if version != sources_version and time.time() - sources_sent >= 2:
                sources_version, sources_sent = version, time.time()
                self.send_event("sources", {"sources": sources})
            if time.time() - last_ping > 10:
                self.wfile.write(b": keep-alive\n\n")
                self.wfile.flush()
                last_ping = time.time()
            if not more:
                self.stopping.wait(0.2)

    def send_event(self, name, obj):
        data = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
        self.wfile.write(("event: %s\ndata: %s\n\n" % (name, data)).encode("utf-8"))
        self.wfile.flush()


def generator(store, rate, stopping):
    """Adds about `rate` records per second, in ten batches a second."""
    carry = 0.0
    while not stopping.wait(0.1):
        carry += rate / 10.0
        n = int(carry)
        if n:
            carry -= n
            store.add_live(n)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, default=8099, help="0 picks a free port")
    ap.add_argument("--bind", default="127.0.0.1")
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--resources", default=os.path.join(here, "..", "..", "Sources", "ChirpConsole", "Resources"))
    ap.add_argument("--token", default=None)
    ap.add_argument("--records", type=int, default=2000, help="records generated at start")
    ap.add_argument("--rate", type=float, default=3.0, help="new records per second")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()

    stopping = threading.Event()
    Handler.store = Store(args.records)
    Handler.resources = os.path.abspath(args.resources)
    add_modules(Handler.resources)
    Handler.token = args.token
    Handler.verbose = args.verbose
    Handler.stopping = stopping
    server = ThreadingHTTPServer((args.bind, args.port), Handler)
    server.daemon_threads = True
    threading.Thread(target=generator, args=(Handler.store, args.rate, stopping), daemon=True).start()

    def stop(*_):
        stopping.set()
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    print("listening on http://%s:%d" % (args.bind, server.server_address[1]), flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        stopping.set()
        server.server_close()


if __name__ == "__main__":
    main()
