#!/usr/bin/env python3
"""Real-browser test of the Chirp Console page.

Drives headless Chromium through chromedriver's W3C WebDriver HTTP API directly
(urllib only: no selenium, no pip). Needs `chromium` and `chromedriver` on PATH
(scripts/chromium-up.sh installs them).

    python3 browser_check.py --url http://127.0.0.1:PORT/ [--token T] [--expect-live]
        [--screenshot-dir DIR] [--hostile-text TEXT] [--json-body-path /orders]
        [--search-word order]
    python3 browser_check.py --mock [--screenshot-dir DIR]

--mock starts mock_console.py (beside this file) with a random token and runs every
check against it, with the mock's hostile record and words.

Each check prints "ok: ..." or "FAIL: ..."; the last line is "N passed, N failed".
The exit status is 1 when any check failed.
"""

import argparse
import base64
import json
import os
import re
import secrets
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from html.parser import HTMLParser

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
RESOURCES = os.path.join(REPO, "Sources", "ChirpConsole", "Resources")
MOCK = os.path.join(HERE, "mock_console.py")
MOCK_HOSTILE = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'
ELEMENT_KEY = "element-6066-11e4-a52e-4f735466cecf"
CTRL, DELETE, RELEASE = "\ue009", "\ue017", "\ue000"  # WebDriver key codes


# --------------------------------------------------------------------------- WebDriver


class WebDriverError(Exception):
    pass


class WebDriver:
    """The few W3C WebDriver commands this test needs."""

    def __init__(self, port):
        self.base = "http://127.0.0.1:%d" % port
        self.session = None

    def request(self, method, path, body=None, timeout=60):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json; charset=utf-8"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as res:
                payload = json.loads(res.read() or b"{}")
        except urllib.error.HTTPError as e:
            try:
                value = json.loads(e.read() or b"{}").get("value", {})
            except ValueError:
                value = {}
            raise WebDriverError("%s %s: %s: %s" % (method, path, value.get("error", e.code),
                                                     str(value.get("message", "")).split("\n")[0]))
        return payload.get("value")

    def ready(self):
        try:
            return bool(self.request("GET", "/status", timeout=2).get("ready"))
        except Exception:
            return False

    def start_session(self, chromium):
        options = {
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1400,900"],
        }
        if chromium:
            options["binary"] = chromium
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": options,
            "goog:loggingPrefs": {"browser": "ALL"},
            "pageLoadStrategy": "normal",
        }}}
        value = self.request("POST", "/session", caps, timeout=120)
        self.session = value["sessionId"]
        self.cmd("POST", "/timeouts", {"script": 30000, "pageLoad": 60000, "implicit": 0})

    def cmd(self, method, path, body=None, timeout=60):
        return self.request(method, "/session/%s%s" % (self.session, path), body, timeout)

    def quit(self):
        if self.session:
            try:
                self.request("DELETE", "/session/%s" % self.session, timeout=30)
            except Exception:
                pass
            self.session = None

    def navigate(self, url):
        self.cmd("POST", "/url", {"url": url})

    def current_url(self):
        return self.cmd("GET", "/url")

    def js(self, script, *args):
        return self.cmd("POST", "/execute/sync", {"script": script, "args": list(args)})

    def find(self, css):
        found = self.cmd("POST", "/elements", {"using": "css selector", "value": css})
        return [e[ELEMENT_KEY] for e in found]

    def click(self, element):
        if isinstance(element, dict):
            element = element[ELEMENT_KEY]
        self.cmd("POST", "/element/%s/click" % element, {})

    def pointer(self, *actions):
        """Runs W3C pointer actions with one mouse; the mouse keeps its state (a button held) until release()."""
        self.cmd("POST", "/actions", {"actions": [{"type": "pointer", "id": "mouse",
                                                   "parameters": {"pointerType": "mouse"},
                                                   "actions": list(actions)}]})

    def release_actions(self):
        self.cmd("DELETE", "/actions")

    def type(self, element, text):
        if isinstance(element, dict):
            element = element[ELEMENT_KEY]
        self.cmd("POST", "/element/%s/value" % element, {"text": text})

    def screenshot(self, path):
        png = base64.b64decode(self.cmd("GET", "/screenshot"))
        with open(path, "wb") as fh:
            fh.write(png)
        return len(png)

    def browser_log(self):
        """Browser console entries, or None when this chromedriver does not give them."""
        for path in ("/se/log", "/log"):
            try:
                return self.cmd("POST", path, {"type": "browser"})
            except WebDriverError:
                continue
        return None


# --------------------------------------------------------------------------- helpers


class Report:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def ok(self, text):
        self.passed += 1
        print("ok: " + text, flush=True)

    def fail(self, text):
        self.failed += 1
        print("FAIL: " + text, flush=True)

    def check(self, condition, ok_text, fail_text):
        if condition:
            self.ok(ok_text)
        else:
            self.fail(fail_text)
        return condition

    def info(self, text):
        print("      " + text, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(fn, timeout, interval=0.1):
    """Calls fn until it returns something truthy; returns that, or the last value at the timeout."""
    deadline = time.monotonic() + timeout
    value = None
    while True:
        try:
            value = fn()
        except WebDriverError:
            value = None
        if value:
            return value
        if time.monotonic() >= deadline:
            return value
        time.sleep(interval)


def stop_process(proc, name):
    """Ends a process this script started (and its process group: chromedriver's browser)."""
    if proc is None or proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        proc.terminate()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
        proc.wait(timeout=5)


def with_token(url, token):
    if not token:
        return url
    parts = urllib.parse.urlsplit(url)
    query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    query = [(k, v) for k, v in query if k != "token"] + [("token", token)]
    return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query)))


class InlineFinder(HTMLParser):
    """Finds what the CSP forbids in the HTML: inline scripts, handlers, style attributes."""

    def __init__(self):
        super().__init__()
        self.problems = []
        self._in_inline_script = False

    def handle_starttag(self, tag, attrs):
        names = {k.lower(): v for k, v in attrs}
        for k in names:
            if k.startswith("on"):
                self.problems.append("<%s %s=...> inline event handler" % (tag, k))
            if k == "style":
                self.problems.append("<%s style=...> inline style attribute" % tag)
        if tag == "style":
            self.problems.append("<style> element (inline style)")
        if tag == "script":
            if not names.get("src"):
                self.problems.append("inline <script>")
            elif urllib.parse.urlsplit(names["src"]).netloc:
                self.problems.append("external script %s" % names["src"])
        if tag == "link" and names.get("href", "").startswith(("http:", "https:", "//")):
            self.problems.append("external resource %s" % names["href"])


# --------------------------------------------------------------------------- JS snippets

JS_LOG_ROWS = """
return Array.from(document.querySelectorAll('#log-list .log-row')).map(function (r) {
  var m = r.querySelector('.log-message');
  return {id: Number(r.dataset.id), level: r.dataset.level, message: m ? m.textContent : null,
          marks: Array.from(r.querySelectorAll('mark')).map(function (x) { return x.textContent; })};
});
"""

# The first log row's columns at a narrow width: the message column must be visible and wide, app and label hidden.
JS_NARROW_LOGS = r"""
const row = document.querySelector('#log-list .log-row');
if (!row) return {ok: false, why: 'no log row'};
const text = row.querySelector('.log-text').getBoundingClientRect();
const hidden = (c) => getComputedStyle(row.querySelector(c)).display === 'none';
const ok = text.width >= 150 && text.right <= innerWidth + 1 && hidden('.log-app') && hidden('.log-label');
return {ok: ok, messageWidth: Math.round(text.width), right: Math.round(text.right), innerWidth: innerWidth};
"""

# The first HTTP row at a narrow width: its URL column visible and wide, the endpoint pane hidden.
JS_NARROW_HTTP = r"""
const row = document.querySelector('#http-list .http-row');
if (!row) return {ok: false, why: 'no HTTP row'};
const url = row.querySelector('.http-url').getBoundingClientRect();
const status = row.querySelector('.http-status').getBoundingClientRect();
const pane = getComputedStyle(document.querySelector('.endpoints-pane')).display;
const ok = url.width >= 150 && url.right <= innerWidth + 1 && status.width > 0 && pane === 'none';
return {ok: ok, urlWidth: Math.round(url.width), right: Math.round(url.right), innerWidth: innerWidth, pane: pane};
"""

# Notes, once per record id, when the page first draws a row with it (rows are recycled by the virtual list, so
# their data-id changes rather than rows being added).
JS_WATCH_DRAWN = """
if (!window.__drawnAt) {
  window.__drawnAt = {};
  var list = document.getElementById('log-list');
  new MutationObserver(function (changes) {
    var now = Date.now();
    changes.forEach(function (c) {
      var nodes = c.type === 'attributes' ? [c.target] : Array.from(c.addedNodes);
      nodes.forEach(function (n) {
        if (n.dataset && n.dataset.id && !(n.dataset.id in window.__drawnAt)) window.__drawnAt[n.dataset.id] = now;
      });
    });
  }).observe(list, {subtree: true, childList: true, attributes: true, attributeFilter: ['data-id']});
}
"""

# The log row in the middle of the visible part of the list (rows are positioned with transforms, not in DOM order).
JS_MIDDLE_ROW = """
var list = document.getElementById('log-list');
var box = list.getBoundingClientRect();
var middle = box.top + list.clientHeight / 2;
var rows = Array.from(list.querySelectorAll('.log-row'));
for (var i = 0; i < rows.length; i++) {
  var r = rows[i].getBoundingClientRect();
  if (r.top <= middle && r.bottom > middle) return rows[i];
}
return null;
"""

# Notes the record a pointer button goes down on, as the page sees it (capture phase, before the page's handlers).
JS_WATCH_PRESS = """
window.__pressedId = null;
if (!window.__pressWatch) {
  window.__pressWatch = true;
  document.addEventListener('pointerdown', function (e) {
    var row = e.target.closest && e.target.closest('.log-row');
    window.__pressedId = row ? row.dataset.id : '';
  }, true);
}
"""

JS_DETAIL_ID = """
var d = document.getElementById('log-detail');
if (!d || d.hidden) return null;
var dts = d.querySelectorAll('dl.fields dt');
for (var i = 0; i < dts.length; i++) if (dts[i].textContent === 'ID') return dts[i].nextElementSibling.textContent;
return '';
"""

JS_MAX_ID = """
var ids = Array.from(document.querySelectorAll('#log-list .log-row')).map(function (r) { return Number(r.dataset.id); });
return ids.length ? Math.max.apply(null, ids) : 0;
"""

JS_SELECT = """
var s = document.querySelector(arguments[0]);
if (!s) return 'missing ' + arguments[0];
s.value = arguments[1];
s.dispatchEvent(new Event('change', {bubbles: true}));
return s.value === arguments[1] ? 'ok' : 'no option ' + arguments[1];
"""

JS_HTTP_ROWS = """
return Array.from(document.querySelectorAll('#http-table .http-row')).map(function (r) {
  var u = r.querySelector('.http-url');
  return {id: Number(r.dataset.id), status: r.dataset.status, cls: r.className, url: u ? u.textContent : ''};
});
"""

# Scrolls a virtual list step by step until a row matching `selector` is in the DOM; returns it.
JS_SCROLL_FIND = """
var list = document.querySelector(arguments[0]);
var step = arguments[2];
var found = list.querySelector(arguments[1]);
if (found) return found;
list.scrollTop = step * list.clientHeight;
return null;
"""


# --------------------------------------------------------------------------- checks


class Checks:
    def __init__(self, driver, args, report, page_url):
        self.d = driver
        self.args = args
        self.r = report
        self.page_url = page_url
        self.shots = args.screenshot_dir
        self.load_seconds = None

    # -- small helpers

    def rows(self):
        return self.d.js(JS_LOG_ROWS) or []

    def select(self, css, value):
        result = self.d.js(JS_SELECT, css, value)
        if result != "ok":
            raise AssertionError("cannot choose %r in %s: %s" % (value, css, result))

    def set_input(self, css, text):
        """Replaces an input's text by typing (real key events: input events fire)."""
        ids = self.d.find(css)
        if not ids:
            raise AssertionError("no element %s" % css)
        self.d.click(ids[0])
        self.d.type(ids[0], CTRL + "a" + RELEASE + DELETE + text)

    def wait_ready(self, timeout=10.0):
        t0 = time.monotonic()
        ok = wait_for(lambda: self.d.js("return document.body && document.body.dataset.ready === '1';"), timeout)
        return ok, time.monotonic() - t0

    def screenshot(self, name):
        if not self.shots:
            return
        path = os.path.join(self.shots, name)
        size = self.d.screenshot(path)
        self.r.info("screenshot %s (%d bytes)" % (path, size))

    def theme(self):
        return self.d.js("return document.documentElement.dataset.theme || "
                         "(matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light');")

    def toggle_theme(self, want):
        if self.theme() != want:
            self.d.click(self.d.find("#theme-toggle")[0])
        wait_for(lambda: self.theme() == want, 3)
        time.sleep(0.3)

    def pwned(self):
        return self.d.js("return typeof window.__pwned === 'undefined' ? null : String(window.__pwned);")

    # -- 1. load, CSP

    def static_page(self):
        """The HTML as served: the CSP header, and nothing inline that the CSP would block."""
        with urllib.request.urlopen(self.args.url, timeout=10) as res:
            csp = res.headers.get("Content-Security-Policy", "")
            html = res.read().decode("utf-8", "replace")
        self.r.check("script-src 'self'" in csp and "style-src 'self'" in csp,
                     "page served with the Content-Security-Policy header",
                     "page served without the expected Content-Security-Policy header (got %r)" % csp)
        finder = InlineFinder()
        finder.feed(html)
        self.r.check(not finder.problems, "index.html has no inline script, handler, style or external resource",
                     "index.html: " + "; ".join(finder.problems))
        base = urllib.parse.urljoin(self.args.url, "/")
        bad = []
        # The entry point, every module it imports (followed from file to file, as the browser does) and the style.
        assets = ["assets/console.js", "assets/console.css"]
        for asset in assets:
            with urllib.request.urlopen(base + asset, timeout=10) as res:
                text = res.read().decode("utf-8", "replace")
                content_type = res.headers.get("Content-Type", "")
            if asset.endswith(".js"):
                if not content_type.startswith("text/javascript"):
                    bad.append("%s served as %r (a module needs text/javascript)" % (asset, content_type))
                for module in re.findall(r'^import\b[^;]*?\bfrom\s+"\./([\w-]+\.js)";', text, re.M):
                    if "assets/" + module not in assets:
                        assets.append("assets/" + module)
                for pattern in (r"\.innerHTML\s*[+]?=", r"\.outerHTML\s*=", r"insertAdjacentHTML\s*\(",
                                r"document\.write", r"\beval\s*\(", r"new\s+Function\s*\(",
                                r"setTimeout\(\s*['\"]"):
                    if re.search(pattern, text):
                        bad.append("%s matches %s" % (asset, pattern))
            if "http://" in text or "https://" in text:
                bad.append("%s names an external URL" % asset)
        self.r.check(not bad and len(assets) > 2,
                     "console.css and console.js with the %d modules it imports: no HTML-parsing sinks, no code "
                     "from strings, no external URLs" % (len(assets) - 2),
                     "; ".join(bad) or "console.js imports no module")

    def load(self):
        self.d.navigate(self.page_url)
        ok, seconds = self.wait_ready(10.0)
        self.load_seconds = seconds
        if not self.r.check(ok, "page loaded, body[data-ready=1] after %.2f s" % seconds,
                            "body[data-ready=\"1\"] not set within 10 s (%.1f s)" % seconds):
            err = self.d.js("var e = document.querySelector('.error-banner:not([hidden])'); return e ? e.textContent : '';")
            if err:
                self.r.info("page shows an error: " + err)
            return False
        rows = self.rows()
        self.r.check(len(rows) > 0, "log rows rendered at load (%d in the DOM)" % len(rows),
                     "no .log-row in #log-list after load")
        violations = self.d.js("return window.__cspViolations === undefined ? null : window.__cspViolations;")
        if violations is None:
            self.r.fail("window.__cspViolations is missing (console.js adds a securitypolicyviolation listener)")
        else:
            self.r.check(not violations, "no CSP violations",
                         "CSP violations: " + json.dumps(violations)[:600])
        entries = self.d.browser_log()
        if entries is None:
            self.r.info("browser log not available from this chromedriver; skipped")
        else:
            severe = [e for e in entries if e.get("level") == "SEVERE"]
            self.r.check(not severe, "no severe browser-log entries (%d entries in all)" % len(entries),
                         "severe browser-log entries: " + "; ".join(str(e.get("message"))[:200] for e in severe))
        return True

    # -- 2. live

    def live(self):
        # From the log call to the row on the page: the page notes when each record id is first drawn (a mutation
        # observer on the rows' data-id), and the API gives the time the app logged it; one machine, one clock.
        self.d.js(JS_WATCH_DRAWN)
        max_id = self.d.js(JS_MAX_ID) or 0
        newer = wait_for(lambda: (self.d.js(JS_MAX_ID) or 0) > max_id, 15.0, 0.05)
        if not newer:
            self.r.fail("no record newer than id %d appeared in #log-list within 15 s" % max_id)
            return
        time.sleep(1.5)  # a few more records, so that the figure is not one record's
        drawn = self.d.js("return window.__drawnAt || {};") or {}
        req = urllib.request.Request(urllib.parse.urljoin(
            self.args.url, "/api/records?after=%d&limit=1000" % max_id))
        if self.args.token:
            req.add_header("Authorization", "Bearer " + self.args.token)
        with urllib.request.urlopen(req, timeout=10) as res:
            logged = {r["id"]: r["time"] for r in json.loads(res.read())["records"]}
        latencies = sorted(drawn[str(i)] - self.d.js("return Date.parse(arguments[0]);", t)
                           for i, t in logged.items() if str(i) in drawn)
        if not latencies:
            self.r.fail("live: none of the %d records logged since id %d was drawn" % (len(logged), max_id))
            return
        worst = latencies[-1]
        self.r.check(worst <= 1000, "live records drawn %.0f-%.0f ms after the app logged them (%d records, median %.0f ms)"
                     % (latencies[0], worst, len(latencies), latencies[len(latencies) // 2]),
                     "live records drawn up to %.0f ms after the app logged them (more than 1 s; %d records)"
                     % (worst, len(latencies)))
        status = self.d.js("return document.getElementById('status').textContent;")
        self.r.check(status == "live", "#status says \"live\"", "#status says %r, expected \"live\"" % status)

        # Pause counts arrivals without showing them; resume shows them.
        self.d.click(self.d.find("#pause")[0])
        # Records accepted just before the click may still be drawn in the next frame: settle, then compare.
        time.sleep(0.3)
        before = self.d.js(JS_MAX_ID)
        counted = wait_for(lambda: self.d.js(
            "var t = document.getElementById('status').textContent; var m = /^paused \\((\\d+) new\\)$/.exec(t);"
            "return m && Number(m[1]) > 0 ? t : null;"), 10.0)
        shown_while_paused = self.d.js(JS_MAX_ID)
        self.d.click(self.d.find("#pause")[0])
        resumed = wait_for(lambda: self.d.js(JS_MAX_ID) > before and
                           self.d.js("return document.getElementById('status').textContent;") == "live", 5.0)
        self.r.check(counted and shown_while_paused == before and resumed,
                     "pause counts new records (%s) without showing them; resume shows them" % counted,
                     "pause/resume: status while paused %r, max id before %s / while paused %s, resumed %s"
                     % (counted, before, shown_while_paused, resumed))

    def click_while_records_arrive(self):
        """A user's click on a row of the live list opens that record, even when records arrive between the button
        going down and coming up (the list follows the tail, rows are recycled): the pointer goes down on a row in
        the middle of the list, the page takes at least one new record, then the button comes up."""
        self.d.click(self.d.find("#tab-logs")[0])
        wait_for(lambda: self.d.js("return document.getElementById('status').textContent;") == "live", 10.0)
        self.d.js(JS_WATCH_PRESS)
        row = wait_for(lambda: self.d.js(JS_MIDDLE_ROW), 5.0)
        if not row:
            self.r.fail("click while records arrive: no row in the middle of #log-list")
            return
        in_memory = lambda: (self.d.js("return window.chirpConsole.stats().recordsInMemory;") or 0)
        before = in_memory()
        try:
            self.d.pointer({"type": "pointerMove", "duration": 0, "origin": row, "x": 0, "y": 0},
                           {"type": "pointerDown", "button": 0})
            pressed = self.d.js("return window.__pressedId;")
            # The event that makes the point: records arrived while the button was down.
            arrived = wait_for(lambda: in_memory() != before, 10.0, 0.02)
            self.d.pointer({"type": "pointerUp", "button": 0})
        finally:
            self.d.release_actions()
        shown = wait_for(lambda: self.d.js(JS_DETAIL_ID), 5.0)
        self.r.check(bool(pressed) and bool(arrived) and shown == pressed,
                     "click while records arrive: record #%s pressed, new records arrived before the button came up, "
                     "its details opened" % pressed,
                     "click while records arrive: pressed #%s, records arrived %s, details show #%s (a click lost or "
                     "given to another row)" % (pressed, bool(arrived), shown))
        # Control: once the button is up, the list follows the tail again.
        newest = lambda: self.d.js("var l = document.getElementById('log-list');"
                                   "return l.scrollTop + l.clientHeight >= l.scrollHeight - 24 ? 1 : 0;")
        after = in_memory()
        following = wait_for(lambda: in_memory() != after and newest(), 10.0)
        self.r.check(bool(following), "after the click the list follows the live tail again",
                     "after the click the list does not follow the tail")
        close = self.d.find("#log-detail .detail-close")
        if close:
            self.d.click(close[0])

    # -- 3. level filter

    def level_filter(self):
        self.select("#filter-level", "error")
        state = wait_for(lambda: self._levels_ok(), 8.0)
        rows = self.rows()
        levels = sorted({r["level"] for r in rows})
        self.r.check(state, "level filter \"error\": %d rows, levels %s" % (len(rows), levels),
                     "level filter \"error\": %d rows, levels %s (want >0 rows, only error/critical)" % (len(rows), levels))

    def _levels_ok(self):
        rows = self.rows()
        return bool(rows) and all(r["level"] in ("error", "critical") for r in rows)

    # -- 4. search

    def search(self):
        word = self.args.search_word
        self.select("#filter-level", "")
        self.set_input("#filter-search", word)

        def matched():
            rows = self.rows()
            if not rows:
                return None
            if any(not r["marks"] for r in rows):
                return None
            if any(m.lower() != word.lower() for r in rows for m in r["marks"]):
                return None
            return rows
        rows = wait_for(matched, 8.0)
        if rows:
            marks = sum(len(r["marks"]) for r in rows)
            self.r.ok("search %r: %d rows, every one with <mark> (%d marks in all)" % (word, len(rows), marks))
        else:
            rows = self.rows()
            bad = [r for r in rows if not r["marks"]][:3]
            self.r.fail("search %r: %d rows; rows without a matching <mark>: %s" % (word, len(rows), json.dumps(bad)[:400]))
        control = "zqxjvkwpq"
        self.set_input("#filter-search", control)
        empty = wait_for(lambda: len(self.rows()) == 0, 8.0)
        self.r.check(empty, "search %r (absent): zero rows" % control,
                     "search %r (absent): still %d rows" % (control, len(self.rows())))

    # -- 5. URL state

    def url_state(self):
        # A word found in error records (with live data, "order" may be in none of them).
        word = self.args.url_state_word or self.args.search_word
        self.select("#filter-level", "error")
        self.set_input("#filter-search", word)
        url = wait_for(lambda: self._url_has(word), 5.0)
        if not url:
            self.r.fail("URL does not reflect level=error and q=%s: %s" % (word, self.d.current_url()))
            return
        token_kept = (not self.args.token) or ("token=" + urllib.parse.quote(self.args.token)) in url
        self.r.check(token_kept, "URL reflects the filters and keeps the token: %s" % self._redact(url),
                     "URL lost the token: %s" % self._redact(url))
        self.d.navigate(url)
        ok, _ = self.wait_ready(10.0)
        restored = ok and wait_for(lambda: self.d.js(
            "return document.getElementById('filter-level').value === 'error' && "
            "document.getElementById('filter-search').value === arguments[0];", word), 5.0)
        rows_ok = restored and wait_for(lambda: self._levels_ok() and all(r["marks"] for r in self.rows()), 8.0)
        self.r.check(restored and rows_ok, "reloaded URL restores level \"error\" and search %r (rows match)" % word,
                     "reloaded URL did not restore the view (filters restored: %s, rows match: %s)" % (restored, rows_ok))
        stored = self.d.js("return localStorage.getItem('chirpConsole.theme');")
        self.r.check(not stored or self.theme() == stored, "theme choice (%s) survives the reload" % (stored or "system"),
                     "theme after reload is %s, stored choice %s" % (self.theme(), stored))

    def _url_has(self, word):
        url = self.d.current_url()
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
        return url if q.get("level") == ["error"] and q.get("q") == [word] else None

    def _redact(self, url):
        return url.replace(self.args.token, "<token>") if self.args.token else url

    # -- extra: regex search, time jump, Clear, keyboard

    def regex(self):
        word = self.args.search_word
        pattern = r"%s\S*\s+\S+" % re.escape(word)  # the word and the next word
        self.select("#filter-level", "")
        self.d.js("var c = document.getElementById('filter-regex'); if (!c.checked) c.click();")
        self.set_input("#filter-search", pattern)
        rx = re.compile(pattern)
        rows = wait_for(lambda: [r for r in self.rows()] if self.rows() and all(
            rx.search(r["message"]) and r["marks"] for r in self.rows()) else None, 8.0)
        url_ok = "regex=1" in self.d.current_url()
        self.r.check(rows and url_ok, "regex %r: %d rows, all match, with <mark>; URL has regex=1" % (pattern, len(rows or [])),
                     "regex %r: rows %s, regex=1 in URL: %s" % (pattern, json.dumps(self.rows()[:2])[:300], url_ok))
        self.set_input("#filter-search", "(")
        banner = wait_for(lambda: self.d.js(
            "var e = document.getElementById('logs-error'); return e && !e.hidden ? e.textContent : null;"), 8.0)
        self.r.check(bool(banner), "bad regex \"(\" shows the server's error: %s" % (banner or "")[:120],
                     "bad regex \"(\": no error shown in #logs-error")
        self.set_input("#filter-search", "")
        self.d.js("var c = document.getElementById('filter-regex'); if (c.checked) c.click();")
        wait_for(lambda: self.d.js("return document.getElementById('logs-error').hidden;") and self.rows(), 8.0)

    def time_jump(self):
        # From a freshly loaded page (the checks before leave filters, selections and scroll positions behind).
        self.d.navigate(self.page_url)
        self.wait_ready(10.0)
        # The time of a record about a hundred rows up, from the API itself.
        req = urllib.request.Request(urllib.parse.urljoin(self.args.url, "/api/records?limit=100"))
        if self.args.token:
            req.add_header("Authorization", "Bearer " + self.args.token)
        with urllib.request.urlopen(req, timeout=10) as res:
            records = json.loads(res.read())["records"]
        if len(records) < 100:
            self.r.info("time jump skipped: fewer than 100 records")
            return
        pivot = records[0]
        newest = records[-1]["id"]
        wait_for(lambda: (self.d.js(JS_MAX_ID) or 0) >= newest, 8.0)  # the list shows the tail
        self.d.js("var d = new Date(arguments[0]); d.setMilliseconds(0);"
                  "function p(n) { return String(n).padStart(2, '0'); }"
                  "var v = d.getFullYear() + '-' + p(d.getMonth() + 1) + '-' + p(d.getDate()) + 'T' + p(d.getHours()) + ':' + p(d.getMinutes()) + ':' + p(d.getSeconds());"
                  "var i = document.getElementById('filter-time'); i.value = v; i.dispatchEvent(new Event('change', {bubbles: true}));",
                  pivot["time"])
        status = lambda: self.d.js("return document.getElementById('status').textContent;")
        to = wait_for(lambda: urllib.parse.parse_qs(urllib.parse.urlsplit(self.d.current_url()).query).get("to"), 5.0)
        if not to:
            self.r.fail("time jump: the URL has no to= after choosing a time in #filter-time")
            return
        # What the API has before that time: the rows shown must be among those (ids need not follow times).
        req = urllib.request.Request(urllib.parse.urljoin(
            self.args.url, "/api/records?limit=1000&to=" + urllib.parse.quote(to[0])))
        if self.args.token:
            req.add_header("Authorization", "Bearer " + self.args.token)
        with urllib.request.urlopen(req, timeout=10) as res:
            allowed = {r["id"] for r in json.loads(res.read())["records"]}
        jumped = wait_for(lambda: status() == "history" and self.rows() and
                          all(r["id"] in allowed for r in self.rows()), 8.0)
        self.r.check(jumped, "time jump to %s: only records before it (%d rows shown, newest before it #%s), status \"history\""
                     % (to[0], len(self.rows()), max(allowed) if allowed else "-"),
                     "time jump to %s: status %r, rows %s not all before it" % (
                         to[0], status(), [r["id"] for r in self.rows()][-5:]))
        self.d.click(self.d.find("#time-now")[0])
        back = wait_for(lambda: (self.d.js(JS_MAX_ID) or 0) >= newest and "to=" not in self.d.current_url(), 8.0)
        self.r.check(back, "\"Now\" returns to the live tail", "\"Now\" did not return to the latest records")

    def app_restart(self):
        """The app is killed (SIGKILL) and started again with its spool: the page goes on showing its records, live,
        and its stream has every sequence number once, with no gap, across the restart."""
        self.d.navigate(self.page_url)
        self.wait_ready(10.0)
        before = self.d.js(JS_MAX_ID) or 0
        subprocess.run([self.args.restart_app], check=True, timeout=60)
        # Live again: well more records than the app logs in the time its restart takes.
        newer = wait_for(lambda: (self.d.js(JS_MAX_ID) or 0) > before + 80, 45.0)
        ids = [r["id"] for r in self.rows()]
        req = urllib.request.Request(urllib.parse.urljoin(self.args.url, "/api/records?limit=1000"))
        if self.args.token:
            req.add_header("Authorization", "Bearer " + self.args.token)
        with urllib.request.urlopen(req, timeout=10) as res:
            records = json.loads(res.read())["records"]
        streams = {}
        for r in records:
            streams.setdefault(r["source"], []).append(r["sequence"])
        broken = {}
        for stream, sequences in streams.items():
            sequences.sort()
            if sequences != list(range(sequences[0], sequences[0] + len(sequences))):
                broken[stream] = sequences[:5] + ["..."] + sequences[-5:]
        span = "%d-%d" % (min(v[0] for v in streams.values()), max(v[-1] for v in streams.values())) if streams else "-"
        self.r.check(bool(newer) and len(ids) == len(set(ids)) and len(streams) == 1 and not broken,
                     "app killed and restarted with its spool: records live again, one stream, sequence numbers %s "
                     "with no gap or duplicate, no duplicate row" % span,
                     "app restart: live again %s, rows unique %s, %d streams, broken %s" % (
                         bool(newer), len(ids) == len(set(ids)), len(streams), broken))

    def narrow(self):
        """A phone's width (390 px): the log list shows time, level and a message column most of the width; the HTTP
        list shows method, status, duration and URL, the endpoint pane out of the way. A window put back as it was
        after."""
        self.d.cmd("POST", "/window/rect", {"width": 390, "height": 844})
        try:
            self.d.click(self.d.find("#tab-logs")[0])
            logs = wait_for(lambda: (self.d.js(JS_NARROW_LOGS) or {}).get("ok") and self.d.js(JS_NARROW_LOGS), 5.0)
            self.r.check(bool(logs), "390 px wide: the log list shows time, level and message, app and label hidden (%s)"
                         % logs, "390 px wide, log list: %s" % self.d.js(JS_NARROW_LOGS))
            self.screenshot("console-narrow-logs.png")
            self.d.click(self.d.find("#tab-http")[0])
            http = wait_for(lambda: (self.d.js(JS_NARROW_HTTP) or {}).get("ok") and self.d.js(JS_NARROW_HTTP), 5.0)
            self.r.check(bool(http), "390 px wide: the HTTP list shows method, status, duration and URL (%s)" % http,
                         "390 px wide, HTTP list: %s" % self.d.js(JS_NARROW_HTTP))
            self.screenshot("console-narrow-http.png")
        finally:
            self.d.cmd("POST", "/window/rect", {"width": 1400, "height": 900})
            self.d.click(self.d.find("#tab-logs")[0])

    def clear(self):
        before = self.d.js(JS_MAX_ID) or 0
        self.d.click(self.d.find("#clear")[0])
        # One look at the rows per try: the page may draw between two looks.
        def only_newer(rows, allow_empty):
            return (allow_empty and not rows) or (bool(rows) and min(r["id"] for r in rows) > before)
        empty = wait_for(lambda: only_newer(self.rows(), True), 2.0)
        self.r.check(empty, "Clear empties the list", "Clear: %d rows still shown" % len(self.rows()))
        if self.args.expect_live:
            fresh = wait_for(lambda: only_newer(self.rows(), False), 10.0)
            self.r.check(fresh, "after Clear only new records appear (%d so far)" % len(self.rows()),
                         "after Clear: no new records, or old ones came back")

    def keyboard(self):
        lst = self.d.find("#log-list")[0]
        self.d.click(self.d.find("#tab-logs")[0])
        self.d.type(lst, "k")
        opened = wait_for(lambda: self.d.js(
            "var s = document.querySelector('#log-list .log-row.selected');"
            "return s && !document.getElementById('log-detail').hidden ? s.dataset.id : null;"), 3.0)
        self.d.type(lst, "k")
        moved = wait_for(lambda: self.d.js(
            "var s = document.querySelector('#log-list .log-row.selected'); return s ? s.dataset.id : null;") not in (None, opened), 3.0)
        self.d.type(lst, "\ue00c")  # Escape
        closed = wait_for(lambda: self.d.js("return document.getElementById('log-detail').hidden;"), 3.0)
        self.r.check(opened and moved and closed, "keyboard: k selects and opens details, k moves up, Esc closes",
                     "keyboard: opened %s, moved %s, closed %s" % (opened, moved, closed))

    def source_filter(self):
        source = wait_for(lambda: self.d.js("return document.querySelector('#sources .source-row');"), 5.0)
        if not source:
            self.r.fail("no .source-row in #sources")
            return
        want = self.d.js("return {app: arguments[0].dataset.app, host: arguments[0].dataset.host, pid: arguments[0].dataset.pid};", source)
        self.d.click(source)
        only = wait_for(lambda: self.d.js(
            "var rows = document.querySelectorAll('#log-list .log-row'); if (!rows.length) return false;"
            "for (var i = 0; i < rows.length; i++) if (rows[i].querySelector('.log-app').textContent !== arguments[0]) return false;"
            "return rows.length;", want["app"]), 8.0)
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(self.d.current_url()).query)
        url_ok = q.get("app") == [want["app"]] and q.get("host") == [want["host"]] and q.get("pid") == [want["pid"]]
        pressed = self.d.js("return document.querySelector('#sources .source-row[aria-pressed=\"true\"]') !== null;")
        self.r.check(only and url_ok and pressed, "source %s@%s pid %s filters the list (%s rows), URL has app/host/pid"
                     % (want["app"], want["host"], want["pid"], only),
                     "source filter: rows only from it %s, URL %s, pressed %s" % (only, url_ok, pressed))
        self.d.click(self.d.find("#source-all")[0])
        wait_for(lambda: "app=" not in self.d.current_url() and len({r["id"] for r in self.rows()}) > 0, 5.0)

    def source_devices(self):
        """Mock only: a source with a device identity shows its short fingerprint and the console's trust, the full
        fingerprint as the title; one without shows neither; a fingerprint that is markup stays text."""
        js_row = ("var r = document.querySelector('#sources .source-row[data-app=\"' + arguments[0] + '\"]');"
                  "if (!r) return null; var d = r.querySelector('.source-device');"
                  "return {hidden: !d || d.hidden || d.offsetParent === null,"
                  " fingerprint: d ? d.querySelector('.source-fingerprint').textContent : null,"
                  " trust: d ? d.querySelector('.source-trust').textContent : null,"
                  " title: d ? d.title : null, rowTitle: r.title};")
        trusted = wait_for(lambda: self.d.js(js_row, "orders-api"), 5.0) or {}
        full = "chirp:4oym-iquy-7qob-jgx3-6tej-s35z-eqt2-4qpe-msnz-gtfe-swmr-w6cs-xbkq-l"
        ok = (not trusted.get("hidden") and trusted.get("fingerprint") == "chirp:4oym-iquy"
              and trusted.get("trust") == "trusted" and full in (trusted.get("title") or "")
              and full in (trusted.get("rowTitle") or ""))
        self.r.check(ok, "source with a device identity: %(fingerprint)s %(trust)s, the full fingerprint as title"
                     % trusted, "source with a device identity: %r" % trusted)
        untrusted = self.d.js(js_row, "worker") or {}
        markup = self.d.js("return document.querySelectorAll('#sources img, #sources script').length;")
        self.r.check(untrusted.get("trust") == "not trusted" and markup == 0 and self.pwned() is None,
                     "untrusted source: 'not trusted', its fingerprint as text (no markup, no __pwned)",
                     "untrusted source: %r, %d markup elements, __pwned=%s" % (untrusted, markup, self.pwned()))
        plain = self.d.js(js_row, "logdemo") or {}
        self.r.check(plain.get("hidden") is True, "source without a device identity: no fingerprint, no trust",
                     "source without a device identity: %r" % plain)

    def reconnect(self, restart):
        """The server goes away and comes back: "reconnecting…", then "live" again, no duplicate rows."""
        self.d.click(self.d.find("#tab-logs")[0])
        restart("stop")
        status = lambda: self.d.js("return document.getElementById('status').textContent;")
        down = wait_for(lambda: status() == "reconnecting…", 8.0)
        restart("start")
        up = wait_for(lambda: status() == "live", 30.0)
        ids = [r["id"] for r in self.rows()]
        unique = len(ids) == len(set(ids))
        self.r.check(down and up and unique, "server restart: status \"reconnecting…\", then \"live\" again; no duplicate rows",
                     "server restart: reconnecting shown %s, live again %s (status %r), unique rows %s"
                     % (down, up, status(), unique))

    # -- 7. hostile text

    def hostile(self):
        text = self.args.hostile_text
        self.select("#filter-level", "")
        find = ("var rows = document.querySelectorAll('#log-list .log-row');"
                "for (var i = 0; i < rows.length; i++) { var m = rows[i].querySelector('.log-message');"
                "  if (m && m.textContent.indexOf(arguments[0]) >= 0) return rows[i]; } return null;")
        row = None
        words = sorted(re.findall(r"[A-Za-z0-9]+", text), key=len)
        # The text itself, then (should the server's search not take markup) its longest word: each time, the row is
        # looked for once the list shows that search (not in the list drawn before it, which the page replaces).
        for query in [text] + words[-1:]:
            self.set_input("#filter-search", query)
            if wait_for(lambda: self._search_shown(query, text), 10.0):
                row = self.d.js(find, text)
                break
        if not row:
            # Look through the unfiltered list, scrolling up (as a user would: older pages load).
            self.set_input("#filter-search", "")
            wait_for(lambda: len(self.rows()) > 0, 8.0)
            still = 0
            for _ in range(0, 1500):
                row = self.d.js(find, text)
                if row:
                    break
                top = self.d.js("var l = document.getElementById('log-list');"
                                "l.dispatchEvent(new WheelEvent('wheel', {bubbles: true, deltaY: -100}));"
                                "l.scrollTop = Math.max(0, l.scrollTop - l.clientHeight); return l.scrollTop;")
                still = still + 1 if top == 0 else 0
                if still > 40:  # at the top for 2 s: nothing older
                    break
                time.sleep(0.05)
        if not row:
            self.r.fail("hostile text not found in #log-list (searched and scrolled)")
            return
        counts = self.d.js("return {img: document.querySelectorAll('#log-list img, #log-list script, #log-list iframe, "
                           "#log-list b, #log-list i').length, pwned: typeof window.__pwned};")
        self.r.check(counts["img"] == 0 and counts["pwned"] == "undefined",
                     "hostile text shown as literal text in .log-message; no img/script element; window.__pwned undefined",
                     "hostile text: %d markup elements in #log-list, window.__pwned is %s" % (counts["img"], counts["pwned"]))
        # A user's click (WebDriver's, with real pointer events) on the row found: the list is live, and the page keeps
        # a pressed row where it is until the button comes up.
        self.d.js(JS_WATCH_PRESS)
        try:
            self.d.click(row)
        except WebDriverError as e:  # the row left the list between the look and the click (it scrolled away)
            self.r.info("row gone before the click (%s): clicking the newest row with the text" % e)
            row = self.d.js(find, text)
            if row:
                self.d.click(row)
        pressed = self.d.js("return window.__pressedId;")
        detail = wait_for(lambda: self.d.js(
            "var d = document.getElementById('log-detail'); if (!d || d.hidden) return null;"
            "return {text: d.textContent.indexOf(arguments[0]) >= 0, "
            "els: d.querySelectorAll('img, script, iframe, b, i').length, pwned: typeof window.__pwned};", text), 5.0)
        self.r.check(detail and detail["text"] and detail["els"] == 0 and detail["pwned"] == "undefined",
                     "record detail shows the hostile text as text, no markup elements, window.__pwned undefined",
                     "record detail: %s (row #%s pressed)" % (json.dumps(detail), pressed))
        self.screenshot("console-logs-detail.png")
        close = self.d.find("#log-detail .detail-close")
        if close:
            self.d.click(close[0])
        self.set_input("#filter-search", "")

    def _search_shown(self, query, text):
        """Whether the list shows the search `query`: the URL carries it (the page applied it), nothing is loading, and
        every row drawn holds `text` (the rows of the list before the search do not all)."""
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(self.d.current_url()).query).get("q")
        if q != [query]:
            return False
        return self.d.js(
            "var f = document.getElementById('logs-footer').textContent;"
            "if (f.indexOf('loading') >= 0) return false;"
            "var rows = document.querySelectorAll('#log-list .log-row');"
            "if (!rows.length) return false;"
            "for (var i = 0; i < rows.length; i++) { var m = rows[i].querySelector('.log-message');"
            "  if (!m || m.textContent.indexOf(arguments[0]) < 0) return false; }"
            "return true;", text)

    # -- 6. HTTP tab

    def http(self):
        path = self.args.json_body_path
        self.d.click(self.d.find("#tab-http")[0])
        rows = wait_for(lambda: self.d.js(JS_HTTP_ROWS), 10.0)
        if not self.r.check(bool(rows), "HTTP tab: %d exchange rows" % len(rows or []), "HTTP tab: no .http-row within 10 s"):
            return
        endpoints = wait_for(lambda: self.d.find("#endpoints .endpoint-row"), 8.0) or []
        self.r.check(bool(endpoints), "HTTP tab: %d endpoints listed" % len(endpoints), "HTTP tab: no .endpoint-row in #endpoints")

        # Filter by the endpoint with the JSON body (POST preferred), then open an exchange.
        endpoint = self.d.js(
            "var path = arguments[0];"
            "var rows = Array.from(document.querySelectorAll('#endpoints .endpoint-row')).filter(function (r) {"
            "  return (r.dataset.path || r.textContent).indexOf(path) >= 0; });"
            "rows.sort(function (a, b) { return (b.dataset.method === 'POST') - (a.dataset.method === 'POST'); });"
            "return rows[0] || null;", path)
        if endpoint:
            self.d.click(endpoint)
            filtered = wait_for(lambda: self._all_urls_have(path), 8.0)
            self.r.check(filtered, "endpoint %s filters the table (%d rows)" % (path, len(filtered or [])),
                         "clicking endpoint %s did not filter the table to it" % path)
        target = wait_for(lambda: self.d.js(
            "var path = arguments[0];"
            "var rows = Array.from(document.querySelectorAll('#http-table .http-row')).filter(function (r) {"
            "  return r.querySelector('.http-url').textContent.indexOf(path) >= 0; });"
            "return rows.length ? rows[rows.length - 1] : null;", path), 5.0)
        if not target:
            self.r.fail("no .http-row whose URL contains %s" % path)
        else:
            self.d.click(target)
            body = wait_for(lambda: self.d.js(
                "var p = document.querySelector('#http-detail:not([hidden]) pre.body-request');"
                "var q = document.querySelector('#http-detail:not([hidden]) pre.body-response');"
                "return p && q ? p.textContent : null;"), 5.0)
            pretty = bool(body) and "\n" in body and "\n  " in body
            self.r.check(pretty, "request body of %s is pretty JSON (%d lines)" % (path, body.count("\n") + 1 if body else 0),
                         "pre.body-request of %s is not pretty-printed JSON: %r" % (path, (body or "")[:200]))
            headers = self.d.js("return document.querySelectorAll('#http-detail .kv-table tr').length;")
            self.r.info("detail pane shows %d header rows" % headers)
            first = self.theme()
            self.screenshot("console-http-dark.png" if first == "dark" else "console-http.png")
            self.toggle_theme("light" if first == "dark" else "dark")
            self.screenshot("console-http-dark.png" if first == "light" else "console-http.png")
            self.toggle_theme(first)

        # Failures stand out: a 5xx or failed row has its own class and looks different from a 2xx row.
        if endpoint:
            self.d.click(self.d.find("#endpoint-chip-clear")[0])
            wait_for(lambda: not self._all_urls_have(path), 8.0)
        bad = None
        for step in range(0, 200):
            bad = self.d.js(JS_SCROLL_FIND, "#http-list", ".http-row.status-5xx, .http-row.status-failed", step)
            if bad:
                break
            if self.d.js("var l = document.getElementById('http-list'); return l.scrollTop + l.clientHeight >= l.scrollHeight - 2 && arguments[0] > 0;", step):
                bad = self.d.js("return document.querySelector('#http-list .http-row.status-5xx, #http-list .http-row.status-failed');")
                break
            time.sleep(0.05)
        if not bad:
            self.r.fail("no 5xx or failed exchange row (class status-5xx / status-failed) found in #http-table")
            return
        look = self.d.js(
            "var bad = arguments[0]; var good = document.querySelector('#http-list .http-row.status-2xx');"
            "function look(r) { var s = getComputedStyle(r), b = getComputedStyle(r.querySelector('.status'));"
            "  return [s.backgroundColor, s.borderLeftColor, b.color, b.backgroundColor].join(' | '); }"
            "return {cls: bad.className, status: bad.dataset.status, bad: look(bad), good: good ? look(good) : null};", bad)
        different = look["good"] is None or look["bad"] != look["good"]
        self.r.check(different, "%s row styled differently (%s) from a 2xx row" % (look["status"], look["cls"]),
                     "failed row looks like a 2xx row: %s" % json.dumps(look))
        self.d.js("var l = document.getElementById('http-list'); l.scrollTop = l.scrollHeight;")

    def _all_urls_have(self, path):
        rows = self.d.js(JS_HTTP_ROWS) or []
        return rows if rows and all(path in r["url"] for r in rows) else None

    # -- 8. Peers

    def peers(self):
        self.d.click(self.d.find("#tab-peers")[0])
        shown = wait_for(lambda: self.d.js(
            "var t = document.getElementById('peers-table'), s = document.getElementById('peer-service');"
            "return t && s && t.offsetParent !== null && s.options.length > 0;"), 8.0)
        if self.args.mock:
            wait_for(lambda: self.d.find("#peers-table .peer-row"), 5.0)
        rows = self.d.find("#peers-table .peer-row")
        service = self.d.js("return document.getElementById('peer-service').value;")
        ok = shown and (rows or not self.args.mock)
        self.r.check(ok, "Peers tab: #peers-table with %d peers for %s" % (len(rows), service),
                     "Peers tab: table/select shown %s, %d peer rows" % (shown, len(rows)))
        markup = self.d.js("return document.querySelectorAll('#peers-table img, #peers-table script').length;")
        self.r.check(markup == 0 and self.pwned() is None, "peer data rendered as text (no markup elements, no __pwned)",
                     "peer data produced %d markup elements; __pwned=%s" % (markup, self.pwned()))
        if self.args.mock:
            device = self.d.js(
                "var r = document.querySelector('#peers-table .peer-row[data-name=\"orders-api\"] .peer-device');"
                "return r ? {text: r.textContent, title: r.title} : null;") or {}
            plain = self.d.js(
                "var r = document.querySelector('#peers-table .peer-row[data-name=\"logdemo\"] .peer-device');"
                "return r ? r.textContent : null;")
            self.r.check(device.get("text") == "chirp:4oym-iquytrusted" and "chirp:4oym-iquy-7qob" in device.get("title", "")
                         and plain == "",
                         "Peers tab: a peer's device fingerprint (short, full as title) and trust; none without one",
                         "Peers tab: device cell %r, without identity %r" % (device, plain))
        self.screenshot("console-peers.png")

        # A service type nobody advertises: the page says so, names the type, and says what to try.
        nobody = "_none%06x._tcp" % secrets.randbelow(1 << 24)
        self.d.navigate(with_token(urllib.parse.urljoin(self.args.url, "/?tab=peers&service=" + nobody), self.args.token))
        self.wait_ready(10.0)
        # Never an empty table without a word: while the console looks for the type, the page says so.
        first = self.d.js("var e = document.getElementById('peers-empty');"
                          "return e && !e.hidden && e.offsetParent !== null ? e.textContent : null;")
        self.r.check(bool(first) and nobody in first, "Peers tab, %s chosen: at once a word (%r)" % (nobody, first),
                     "Peers tab, %s chosen: the empty table says nothing (%r)" % (nobody, first))
        empty = wait_for(lambda: self.d.js(
            "var e = document.getElementById('peers-empty');"
            "return e && !e.hidden && e.offsetParent !== null && e.textContent.indexOf('No peer') === 0 ?"
            " e.textContent : null;"), 10.0)
        rows = self.d.find("#peers-table .peer-row")
        self.r.check(bool(empty) and nobody in empty and "chirp browse" in empty and not rows,
                     "Peers tab, no peer of %s: the page says so, with a hint (%r)" % (nobody, empty),
                     "Peers tab, no peer of %s: %d rows, empty state %r (want the type named and a hint)"
                     % (nobody, len(rows), empty))
        self.screenshot("console-peers-none.png")
        self.d.navigate(self.page_url)
        self.wait_ready(10.0)

    # -- 9. stats

    def stats(self):
        self.d.click(self.d.find("#tab-logs")[0])
        time.sleep(0.5)
        value = self.d.js(
            "var s = window.chirpConsole && window.chirpConsole.stats ? window.chirpConsole.stats() : null;"
            "var m = performance.memory ? {usedJSHeapSize: performance.memory.usedJSHeapSize,"
            " totalJSHeapSize: performance.memory.totalJSHeapSize} : null;"
            "return {stats: s, memory: m, loadSeconds: arguments[0]};", self.load_seconds)
        print("stats: " + json.dumps(value), flush=True)
        s = value.get("stats")
        if not s:
            self.r.fail("window.chirpConsole.stats() is missing")
            return
        virtual = s["rowsInDom"] <= 300 and (s["recordsInMemory"] <= 300 or s["rowsInDom"] < s["recordsInMemory"])
        self.r.check(virtual and s.get("firstPaintMs") is not None,
                     "virtualised: %d rows in the DOM for %d records in memory; first paint at %s ms"
                     % (s["rowsInDom"], s["recordsInMemory"], s.get("firstPaintMs")),
                     "not virtualised or no first paint: %s" % json.dumps(s))

    # -- 10. themes and screenshots

    def theme_and_shots(self):
        self.screenshot("console-logs-dark.png" if self.theme() == "dark" else "console-logs.png")
        start = self.theme()
        other = "light" if start == "dark" else "dark"
        self.toggle_theme(other)
        stored = self.d.js("return localStorage.getItem('chirpConsole.theme');")
        self.r.check(self.theme() == other and stored == other,
                     "#theme-toggle switches to %s and remembers it" % other,
                     "#theme-toggle: theme %s, localStorage %r (want %s)" % (self.theme(), stored, other))
        self.screenshot("console-logs-dark.png" if other == "dark" else "console-logs.png")


# --------------------------------------------------------------------------- main


def start_mock(token, rate, port=0, records=2000):
    log = tempfile.NamedTemporaryFile(prefix="mock-console-", suffix=".log", delete=False)
    proc = subprocess.Popen([sys.executable, MOCK, "--port", str(port), "--resources", RESOURCES, "--token", token,
                             "--rate", str(rate), "--records", str(records)],
                            stdout=subprocess.PIPE, stderr=log, start_new_session=True, text=True)
    ready, _, _ = select.select([proc.stdout], [], [], 20)
    line = proc.stdout.readline().strip() if ready else ""
    if not line.startswith("listening on "):
        stop_process(proc, "mock")
        raise RuntimeError("mock_console.py did not start (%r); see %s" % (line, log.name))
    return proc, line[len("listening on "):] + "/"


def start_chromedriver():
    binary = shutil.which("chromedriver")
    if not binary:
        raise RuntimeError("chromedriver not found: run scripts/chromium-up.sh")
    port = free_port()
    log = tempfile.NamedTemporaryFile(prefix="chromedriver-", suffix=".log", delete=False)
    proc = subprocess.Popen([binary, "--port=%d" % port], stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    driver = WebDriver(port)
    if not wait_for(driver.ready, 20.0, 0.1):
        stop_process(proc, "chromedriver")
        raise RuntimeError("chromedriver did not become ready on port %d; see %s" % (port, log.name))
    return proc, driver


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", help="the console, e.g. http://127.0.0.1:8095/")
    ap.add_argument("--token", default=None)
    ap.add_argument("--screenshot-dir", default=None)
    ap.add_argument("--expect-live", action="store_true", help="records keep arriving: check the live stream")
    ap.add_argument("--hostile-text", default=None, help="a record's message made of markup")
    ap.add_argument("--json-body-path", default="/orders", help="an exchange path whose request body is JSON")
    ap.add_argument("--search-word", default="order", help="a word that occurs in messages")
    ap.add_argument("--url-state-word", default=None,
                    help="a word that occurs in error records, for the URL-state check (default: --search-word)")
    ap.add_argument("--mock", action="store_true", help="start mock_console.py and test against it")
    ap.add_argument("--restart-app", default=None,
                    help="a command that kills the app feeding the console and starts it again (with its spool)")
    args = ap.parse_args()
    if not args.mock and not args.url:
        ap.error("give --url or --mock")

    # A time limit's SIGTERM (scripts/console-browser-test.sh) ends the checks through `finally`: chromedriver and
    # its browser are stopped, not left behind.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    report = Report()
    started = time.monotonic()
    mock = chromedriver = driver = mock_restart = None
    try:
        if args.mock:
            args.token = args.token or secrets.token_hex(8)
            mock, args.url = start_mock(args.token, rate=4)

            restarted_records = 2000

            def mock_restart(what):
                # The mock numbers its records from 1 each time it starts: started again, it first makes as many as
                # it had (and some), so that its ids go on growing as the console's do across a restart.
                nonlocal mock, restarted_records
                if what == "stop":
                    req = urllib.request.Request(urllib.parse.urljoin(args.url, "/api/records?limit=1"),
                                                 headers={"Authorization": "Bearer " + args.token})
                    with urllib.request.urlopen(req, timeout=10) as res:
                        records = json.loads(res.read())["records"]
                    restarted_records = (records[-1]["id"] if records else 0) + 100
                    stop_process(mock, "mock")
                else:
                    mock, _ = start_mock(args.token, rate=4, port=urllib.parse.urlsplit(args.url).port,
                                         records=restarted_records)
            args.expect_live = True
            args.hostile_text = args.hostile_text or MOCK_HOSTILE
            print("mock console at %s" % args.url, flush=True)
        if args.screenshot_dir:
            os.makedirs(args.screenshot_dir, exist_ok=True)
        if args.token:  # a request without the token is refused
            try:
                urllib.request.urlopen(urllib.parse.urljoin(args.url, "/api/sources"), timeout=10)
                report.fail("/api/sources answered without the token (want 401)")
            except urllib.error.HTTPError as e:
                report.check(e.code == 401, "/api/sources without the token: 401",
                             "/api/sources without the token: %d (want 401)" % e.code)

        chromedriver, driver = start_chromedriver()
        chromium = shutil.which("chromium") or shutil.which("chromium-browser")
        driver.start_session(chromium)
        checks = Checks(driver, args, report, with_token(args.url, args.token))

        def run(name, fn):
            try:
                return fn()
            except Exception as e:  # one broken check does not stop the others
                report.fail("%s: %s: %s" % (name, type(e).__name__, e))
                return None

        run("static page", checks.static_page)
        if run("load", checks.load):
            if args.expect_live:
                run("live", checks.live)
                run("click while records arrive", checks.click_while_records_arrive)
            run("themes", checks.theme_and_shots)
            run("level filter", checks.level_filter)
            run("search", checks.search)
            run("URL state", checks.url_state)
            run("regex", checks.regex)
            if args.hostile_text:
                run("hostile text", checks.hostile)
            run("time jump", checks.time_jump)
            run("keyboard", checks.keyboard)
            run("HTTP tab", checks.http)
            run("peers", checks.peers)
            run("stats", checks.stats)
            run("source filter", checks.source_filter)
            if args.mock:
                run("source devices", checks.source_devices)
            if mock_restart:
                run("reconnect", lambda: checks.reconnect(mock_restart))
            if args.restart_app:
                run("app restart", checks.app_restart)
            run("narrow window", checks.narrow)
            run("clear", checks.clear)
            entries = driver.browser_log() or []
            # The 400 of the deliberately bad regex is expected.
            severe = [e for e in entries if e.get("level") == "SEVERE" and
                      not ("regex=" in str(e.get("message")) and "400" in str(e.get("message")))]
            report.check(not severe, "no severe browser-log entries during the checks",
                         "severe browser-log entries: " + "; ".join(str(e.get("message"))[:200] for e in severe))
            violations = run("csp", lambda: driver.js("return window.__cspViolations || [];"))
            report.check(not violations, "no CSP violations during the checks",
                         "CSP violations: " + json.dumps(violations)[:600])
    except Exception as e:
        report.fail("setup: %s: %s" % (type(e).__name__, e))
    finally:
        if driver:
            driver.quit()
        stop_process(chromedriver, "chromedriver")
        stop_process(mock, "mock")
    print("took %.1f s" % (time.monotonic() - started), flush=True)
    print("%d passed, %d failed" % (report.passed, report.failed), flush=True)
    sys.exit(1 if report.failed else 0)


if __name__ == "__main__":
    main()
