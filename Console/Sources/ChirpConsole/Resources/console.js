/*
 * Chirp Console — the page's script.
 *
 * One IIFE, no dependencies, no external resources. Served under a strict CSP
 * (script-src 'self'; style-src 'self'): no inline scripts or handlers, no code
 * from strings, no style attributes (only CSSOM: element.style.x = ...).
 *
 * Everything that comes from the API is untrusted. It is put into the page only as
 * text (textContent, createTextNode) or as non-URL attributes (setAttribute /
 * dataset); search matches are built from text nodes and <mark> elements. No API
 * that parses HTML is used anywhere in this file, and no record URL becomes a link.
 *
 * Sections:
 *   constants · DOM and formatting helpers · URL state · API · highlighting ·
 *   Feed (a virtualised, live, paged list; used by the Logs and HTTP tabs) ·
 *   log rows and details · HTTP rows and details · sources · endpoints · peers ·
 *   status, tabs, theme, keyboard · start-up
 */
(function () {
  "use strict";

  // Collected for the browser test (Tests/ConsoleBrowser/browser_check.py).
  window.__cspViolations = window.__cspViolations || [];
  document.addEventListener("securitypolicyviolation", function (e) {
    window.__cspViolations.push({
      directive: e.violatedDirective || "",
      blockedURI: e.blockedURI || "",
      sample: e.sample || "",
      sourceFile: e.sourceFile || "",
      line: e.lineNumber || 0,
    });
  });

  // ------------------------------------------------------------------ constants

  const LEVELS = ["trace", "debug", "info", "notice", "warning", "error", "critical"];
  const MAX_RECORDS = 50000;   // records kept in memory by one list; the oldest are dropped
  const TRIM_CHUNK = 2000;     // ...in chunks, so that the array is not spliced on every event
  const MAX_PENDING = 50000;   // records held while paused; past that, resume reloads
  const PAGE_SIZE = 1000;      // records per request (the API's maximum)
  const OVERSCAN = 10;         // rows drawn above and below the visible ones
  const ROW_TEXT_MAX = 1000;   // characters of a message drawn in a row (the details show all)
  const PEERS_REFRESH_MS = 2000;
  const ENDPOINTS_REFRESH_MS = 5000;
  const THEME_KEY = "chirpConsole.theme";

  // ------------------------------------------------------------------ DOM and formatting helpers

  function $(id) { return document.getElementById(id); }

  /** A new element with an optional class and text (always as text). */
  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function debounce(fn, ms) {
    let timer = 0;
    const run = function () { timer = 0; fn(); };
    const debounced = function () { clearTimeout(timer); timer = setTimeout(run, ms); };
    debounced.now = function () { clearTimeout(timer); run(); };
    return debounced;
  }

  function pad(n, width) { return String(n).padStart(width, "0"); }

  /** "HH:MM:SS.mmm" in local time; the ISO text itself when it does not parse. */
  function formatClock(iso) {
    const d = new Date(iso);
    if (isNaN(d.getTime())) return String(iso || "");
    return pad(d.getHours(), 2) + ":" + pad(d.getMinutes(), 2) + ":" + pad(d.getSeconds(), 2) +
      "." + pad(d.getMilliseconds(), 3);
  }

  function formatCount(n) { return typeof n === "number" ? n.toLocaleString("en-US") : "–"; }

  function formatMs(ms) {
    if (typeof ms !== "number" || !isFinite(ms)) return "–";
    if (ms < 10) return ms.toFixed(1) + " ms";
    if (ms < 10000) return Math.round(ms).toLocaleString("en-US") + " ms";
    return (ms / 1000).toFixed(1) + " s";
  }

  /** Metadata as compact `key=value` text; nested values as JSON. */
  function metadataText(meta) {
    if (!meta || typeof meta !== "object") return "";
    const parts = [];
    for (const key of Object.keys(meta)) {
      const v = meta[key];
      parts.push(key + "=" + (typeof v === "string" ? v : JSON.stringify(v)));
    }
    return parts.join(" ");
  }

  /** The level as a known name (for classes and data-level), "unknown" otherwise. */
  function levelOf(record) {
    const l = String(record.level || "").toLowerCase();
    return LEVELS.indexOf(l) >= 0 ? l : "unknown";
  }

  /** "2xx".."5xx", or "failed" when the exchange has no status. */
  function statusClass(status) {
    if (typeof status !== "number") return "failed";
    const c = Math.floor(status / 100);
    return c >= 1 && c <= 5 ? c + "xx" : "failed";
  }

  // Derived texts are computed once per record and kept on it.
  function clockOf(r) { return r._clock || (r._clock = formatClock(r.time)); }
  function metaOf(r) { return r._meta !== undefined ? r._meta : (r._meta = metadataText(r.metadata)); }
  function rowMessageOf(r) {
    if (r._msg === undefined) {
      const m = String(r.message === undefined || r.message === null ? "" : r.message);
      r._msg = m.length > ROW_TEXT_MAX ? m.slice(0, ROW_TEXT_MAX) + "…" : m;
    }
    return r._msg;
  }

  /** A body as display text: JSON pretty-printed with 2 spaces, anything else as it is. */
  function formatBody(text, headers) {
    if (text === null || text === undefined) return { text: "", json: false };
    const s = String(text);
    const t = s.trim();
    const jsonType = headerValue(headers, "content-type").toLowerCase().indexOf("json") >= 0;
    if (jsonType || t.startsWith("{") || t.startsWith("[")) {
      try { return { text: JSON.stringify(JSON.parse(t), null, 2), json: true }; } catch (_) { /* not JSON */ }
    }
    return { text: s, json: false };
  }

  function headerPairs(headers) {
    if (Array.isArray(headers)) return headers.filter(Array.isArray).map(function (p) { return [String(p[0]), String(p[1])]; });
    if (headers && typeof headers === "object") return Object.keys(headers).map(function (k) { return [k, String(headers[k])]; });
    return [];
  }

  function headerValue(headers, name) {
    for (const pair of headerPairs(headers)) if (pair[0].toLowerCase() === name) return pair[1];
    return "";
  }

  /** datetime-local value (local time) <-> ISO 8601 (UTC). */
  function localInputToISO(value) {
    if (!value) return "";
    const d = new Date(value);
    return isNaN(d.getTime()) ? "" : d.toISOString();
  }
  function isoToLocalInput(iso) {
    const d = new Date(iso);
    if (!iso || isNaN(d.getTime())) return "";
    return d.getFullYear() + "-" + pad(d.getMonth() + 1, 2) + "-" + pad(d.getDate(), 2) + "T" +
      pad(d.getHours(), 2) + ":" + pad(d.getMinutes(), 2) + ":" + pad(d.getSeconds(), 2);
  }

  // ------------------------------------------------------------------ URL state

  const pageURL = new URL(location.href);
  const token = pageURL.searchParams.get("token") || "";

  /** The view's state; mirrored into the page URL (shareable) by writeURL(). */
  const state = {
    tab: "logs",
    app: "", host: "", pid: "",                 // source filter (app alone, or app+host+pid)
    level: "", label: "", q: "", regex: false,   // Logs filters
    to: "",                                      // time jump (ISO), Logs
    method: "", path: "", status: "",            // HTTP filters
    service: "_chirp._tcp",                      // Peers
  };

  function readStateFromURL() {
    const p = pageURL.searchParams;
    const tab = p.get("tab");
    if (tab === "http" || tab === "peers" || tab === "logs") state.tab = tab;
    for (const key of ["app", "host", "pid", "label", "q", "method", "path", "status"]) state[key] = p.get(key) || "";
    const level = p.get("level") || "";
    state.level = LEVELS.indexOf(level) >= 0 ? level : "";
    state.regex = p.get("regex") === "1";
    state.to = localInputToISO(p.get("to") || "");
    state.service = p.get("service") || "_chirp._tcp";
  }

  function writeURL() {
    const p = new URLSearchParams();
    if (token) p.set("token", token);
    if (state.tab !== "logs") p.set("tab", state.tab);
    for (const key of ["app", "host", "pid", "level", "label", "q"]) if (state[key]) p.set(key, state[key]);
    if (state.regex) p.set("regex", "1");
    if (state.to) p.set("to", state.to);
    for (const key of ["method", "path", "status"]) if (state[key]) p.set(key, state[key]);
    if (state.service !== "_chirp._tcp") p.set("service", state.service);
    const query = p.toString();
    history.replaceState(null, "", location.pathname + (query ? "?" + query : "") + location.hash);
  }

  function sourceParams() {
    return { app: state.app, host: state.host, pid: state.pid };
  }

  function logParams() {
    const p = sourceParams();
    p.level = state.level;
    p.label = state.label;
    if (state.q.trim()) {
      if (state.regex) p.regex = state.q; else p.q = state.q.trim();
    }
    return p;
  }

  function httpParams() {
    const p = sourceParams();
    p.http = "1";
    p.method = state.method;
    p.path = state.path;
    p.status = state.status;
    return p;
  }

  // ------------------------------------------------------------------ API

  function apiURL(path, params) {
    const u = new URL(path, location.origin);
    for (const key of Object.keys(params || {})) {
      const v = params[key];
      if (v !== "" && v !== null && v !== undefined) u.searchParams.set(key, String(v));
    }
    return u;
  }

  /** GET a JSON API; the token goes in the Authorization header. Throws Error with .status. */
  async function api(path, params, signal) {
    const headers = { Accept: "application/json" };
    if (token) headers.Authorization = "Bearer " + token;
    let res;
    try {
      res = await fetch(apiURL(path, params), { headers: headers, signal: signal, cache: "no-store", credentials: "same-origin" });
    } catch (err) {
      if (err && err.name === "AbortError") throw err;
      const e = new Error("Cannot reach the console server");
      e.status = 0;
      throw e;
    }
    let body = null;
    try { body = await res.json(); } catch (_) { body = null; }
    if (!res.ok) {
      let text = body && typeof body.error === "string" ? body.error : "HTTP " + res.status;
      if (res.status === 401) text = "Unauthorized (" + text + "). Open the console with its token: ?token=…";
      const e = new Error(text);
      e.status = res.status;
      throw e;
    }
    return body || {};
  }

  /** EventSource cannot send headers: the token goes in the query. */
  function streamURL(params) {
    const u = apiURL("/api/stream", params);
    if (token) u.searchParams.set("token", token);
    return u.toString();
  }

  // ------------------------------------------------------------------ highlighting

  let matcher = null;  // RegExp (global) for the current search, or null

  function escapeRegExp(s) { return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"); }

  function buildMatcher() {
    const q = state.q.trim();
    if (!q) return null;
    if (state.regex) {
      try { return new RegExp(state.q, "g"); } catch (_) { return null; }
    }
    const words = q.split(/\s+/)
      .map(function (w) { return w.replace(/^"+|"+$/g, ""); })
      .filter(Boolean)
      .sort(function (a, b) { return b.length - a.length; })
      .map(escapeRegExp);
    return words.length ? new RegExp(words.join("|"), "gi") : null;
  }

  /** Puts `text` into `node` as text nodes, with each match of the search in a <mark>. */
  function setHighlighted(node, text) {
    if (!matcher || !text) { node.textContent = text; return; }
    node.textContent = "";
    const re = matcher;
    re.lastIndex = 0;
    let pos = 0;
    let m;
    let guard = 0;
    while ((m = re.exec(text)) !== null && guard++ < 500) {
      if (m[0] === "") { re.lastIndex++; continue; }
      if (m.index > pos) node.appendChild(document.createTextNode(text.slice(pos, m.index)));
      node.appendChild(el("mark", null, m[0]));
      pos = m.index + m[0].length;
    }
    if (pos < text.length) node.appendChild(document.createTextNode(text.slice(pos)));
  }

  // ------------------------------------------------------------------ ready / first paint

  let firstPaintMs = null;
  let lastUserInput = -Infinity;  // performance.now() of the last wheel/key/pointer input (none yet: -Infinity, not 0, or the first 1.5 s after loading would count as input)

  function markReady() {
    if (firstPaintMs !== null) return;
    firstPaintMs = Math.round(performance.now());
    document.body.dataset.ready = "1";
  }

  // ------------------------------------------------------------------ Feed

  /**
   * A list of records, newest at the bottom, that is
   *  - virtualised: fixed row height; only the visible rows (plus OVERSCAN) are in the DOM,
   *    row elements are recycled; all DOM work happens in one requestAnimationFrame;
   *  - live: an EventSource appends new records; reopened with after=<last id> on errors;
   *  - paged: scrolling to the top loads older records (before=); at most MAX_RECORDS are
   *    kept; when the newest had to be dropped (or after a time jump), scrolling to the
   *    bottom loads newer ones (after=) until it is caught up with the live tail.
   */
  class Feed {
    constructor(o) {
      this.name = o.name;
      this.list = o.list;
      this.rowHeight = o.rowHeight;
      this.rowClass = o.rowClass;
      this.params = o.params;          // () => filter parameters
      this.accept = o.accept || null;  // optional client-side filter
      this.createRow = o.createRow;
      this.fillRow = o.fillRow;
      this.onSelect = o.onSelect;
      this.onUpdate = o.onUpdate || function () {};
      this.emptyText = o.emptyText;
      this.errorEl = o.errorEl;
      this.emptyEl = o.emptyEl;
      this.jumpEl = o.jumpEl;
      this.onJump = o.onJump || null;

      this.records = [];               // ascending by id
      this.rows = new Map();           // id -> row element in the DOM
      this.free = [];                  // detached row elements for reuse
      this.spacer = el("div", "vlist-spacer");
      this.list.appendChild(this.spacer);
      this.spacerHeight = -1;

      this.active = true;              // stream only while active (the HTTP tab is visible)
      this.loaded = false;
      this.loading = false;
      this.loadingMore = "";           // "", "older" or "newer"
      this.error = null;
      this.historyTo = "";             // time jump: records before this ISO time, no stream
      this.lastId = 0;                 // newest id seen (fetch or stream): the stream's after=
      this.olderAnchor = 0;            // before= for the next older page
      this.newerAnchor = 0;            // after= for the next newer page
      this.hasOlder = false;
      this.hasNewer = false;           // newer records exist that are not in `records`
      this.clearedAfter = 0;           // Clear: only records with a greater id are shown

      this.paused = false;
      this.pending = [];               // stream records not shown yet (paused, or not caught up)
      this.pendingCount = 0;
      this.pendingOverflow = false;

      this.stick = true;               // follow the bottom
      this.shift = 0;                  // pixels to move scrollTop by at the next render
      this.selectedId = null;
      this.pressedId = null;           // the record a pointer button went down on (a click selects it)
      this.holding = false;            // a button is down on a row: the list does not follow the tail
      this.stale = false;              // every drawn row is redrawn at the next render (new records or search)

      this.es = null;
      this.conn = "idle";              // idle | connecting | live | reconnecting | history
      this.retryTimer = 0;
      this.retryDelay = 1000;
      this.generation = 0;             // bumped by reload(): late answers are ignored
      this.abort = null;
      this.renderQueued = false;

      this.bind();
    }

    bind() {
      const self = this;
      this.list.addEventListener("scroll", function () { self.onScroll(); }, { passive: true });
      // A click is the record pressed, even when the list moved under the pointer before the button came up (live
      // records arrive, rows are recycled): the browser then sends the click to the list, or to another row. And
      // while a button is down on a row, the list does not follow the tail, so the row stays under the pointer.
      this.list.addEventListener("pointerdown", function (e) {
        const row = e.button === 0 ? e.target.closest("." + self.rowClass) : null;
        self.pressedId = row ? Number(row.dataset.id) : null;
        if (row) self.holding = true;
      });
      const release = function () {
        if (!self.holding) return;
        self.holding = false;
        self.schedule();
      };
      for (const type of ["pointerup", "pointercancel", "blur"]) window.addEventListener(type, release, true);
      this.list.addEventListener("click", function (e) {
        const pressed = self.pressedId;
        self.pressedId = null;
        release();
        if (pressed !== null && self.find(pressed)) { self.select(pressed); return; }
        // A click without a press on a row of this list (from the keyboard, or from a script).
        const row = e.target.closest("." + self.rowClass);
        if (row) self.select(Number(row.dataset.id));
      });
      if (typeof ResizeObserver === "function") {
        new ResizeObserver(function () { self.schedule(); }).observe(this.list);
      } else {
        window.addEventListener("resize", function () { self.schedule(); });
      }
      if (this.jumpEl) {
        this.jumpEl.addEventListener("click", function () {
          if (self.onJump) self.onJump(); else self.jumpToLatest();
        });
      }
    }

    // -- loading

    /** Fetches the latest page (or the page before historyTo) and (re)starts the stream. */
    async reload() {
      const gen = ++this.generation;
      this.stopStream();
      if (this.abort) this.abort.abort();
      const abort = (this.abort = new AbortController());
      this.loading = true;
      this.loadingMore = "";
      this.pending = [];
      this.pendingCount = 0;
      this.pendingOverflow = false;
      this.clearedAfter = 0;
      this.schedule();

      const params = this.params();
      params.limit = PAGE_SIZE;
      if (this.historyTo) params.to = this.historyTo;
      let body;
      try {
        body = await api("/api/records", params, abort.signal);
      } catch (err) {
        if (gen !== this.generation || (err && err.name === "AbortError")) return;
        this.loading = false;
        this.loaded = true;
        this.replaceRecords([]);
        this.setError(err);
        if (err.status === 0 || err.status >= 500) {
          // The server is away: try again, like the stream does.
          this.setConn("reconnecting");
          this.retryTimer = setTimeout(() => { this.retryTimer = 0; this.reload(); }, this.nextRetryDelay());
        } else {
          this.setConn("idle");
        }
        return;
      }
      if (gen !== this.generation) return;
      this.setError(null);
      const raw = Array.isArray(body.records) ? body.records : [];
      this.loading = false;
      this.loaded = true;
      this.lastId = raw.length ? raw[raw.length - 1].id : 0;
      this.olderAnchor = raw.length ? raw[0].id : 0;
      this.newerAnchor = this.lastId;
      this.hasOlder = !!body.hasMore;
      this.hasNewer = !!this.historyTo;
      this.stick = true;  // show the end; after a time jump that is the moment jumped to
      this.replaceRecords(this.accept ? raw.filter(this.accept) : raw);
      if (this.historyTo) this.setConn("history");
      else if (this.active) this.startStream();
      else this.setConn("idle");
    }

    async loadOlder() {
      if (!this.hasOlder || this.loading || this.loadingMore || !this.olderAnchor) return;
      const gen = this.generation;
      this.loadingMore = "older";
      this.schedule();
      const params = this.params();
      params.limit = PAGE_SIZE;
      params.before = this.olderAnchor;
      if (this.historyTo) params.to = this.historyTo;
      let body;
      try {
        body = await api("/api/records", params);
      } catch (err) {
        if (gen === this.generation) { this.loadingMore = ""; this.setError(err); this.schedule(); }
        return;
      }
      if (gen !== this.generation) return;
      this.loadingMore = "";
      const raw = Array.isArray(body.records) ? body.records : [];
      this.hasOlder = !!body.hasMore && raw.length > 0;
      if (raw.length) this.olderAnchor = raw[0].id;
      let recs = this.accept ? raw.filter(this.accept) : raw;
      if (this.clearedAfter && raw.length && raw[0].id <= this.clearedAfter) {
        recs = recs.filter((r) => r.id > this.clearedAfter);
        this.hasOlder = false;
      }
      if (recs.length) {
        // The rows on screen stay where they are: scrollTop moves down by the new rows.
        this.records = recs.concat(this.records);
        this.shift += recs.length * this.rowHeight;
        if (this.records.length > MAX_RECORDS) {
          this.records.length = MAX_RECORDS;  // drop the newest; fetch them again at the bottom
          this.newerAnchor = this.records[this.records.length - 1].id;
          this.hasNewer = true;
          this.stick = false;
        }
      }
      this.schedule();
    }

    async loadNewer() {
      if (!this.hasNewer || this.loading || this.loadingMore) return;
      const gen = this.generation;
      this.loadingMore = "newer";
      this.schedule();
      const params = this.params();
      params.limit = PAGE_SIZE;
      params.after = this.newerAnchor;
      let body;
      try {
        body = await api("/api/records", params);
      } catch (err) {
        if (gen === this.generation) { this.loadingMore = ""; this.setError(err); this.schedule(); }
        return;
      }
      if (gen !== this.generation) return;
      this.loadingMore = "";
      const raw = Array.isArray(body.records) ? body.records : [];
      if (raw.length) this.newerAnchor = raw[raw.length - 1].id;
      this.append(this.accept ? raw.filter(this.accept) : raw);
      if (!body.hasMore) {
        this.hasNewer = false;
        if (!this.historyTo) this.applyPending();  // caught up with the live tail
      }
      this.schedule();
    }

    // -- stream

    startStream() {
      this.stopStream();
      const params = this.params();
      params.after = this.lastId;
      const es = new EventSource(streamURL(params));
      this.es = es;
      if (this.conn !== "reconnecting") this.setConn("connecting");
      es.addEventListener("open", () => {
        if (this.es !== es) return;
        this.retryDelay = 1000;
        this.setConn("live");
      });
      es.addEventListener("records", (e) => { if (this.es === es) this.onStreamRecords(e.data); });
      es.addEventListener("sources", (e) => { if (this.es === es) sourcesPane.updateFromEvent(e.data); });
      es.addEventListener("error", () => {
        if (this.es !== es) return;
        // EventSource would reconnect by itself with the old after=; reopen it with the last id seen.
        this.stopStream();
        this.setConn("reconnecting");
        this.retryTimer = setTimeout(() => { this.retryTimer = 0; this.startStream(); }, this.nextRetryDelay());
      });
    }

    stopStream() {
      if (this.es) { this.es.close(); this.es = null; }
      if (this.retryTimer) { clearTimeout(this.retryTimer); this.retryTimer = 0; }
    }

    nextRetryDelay() {
      const d = this.retryDelay;
      this.retryDelay = Math.min(this.retryDelay * 2, 15000);
      return d;
    }

    onStreamRecords(data) {
      let list;
      try { list = JSON.parse(data).records; } catch (_) { return; }
      if (!Array.isArray(list)) return;
      const fresh = [];
      for (const r of list) {
        if (!r || typeof r.id !== "number" || r.id <= this.lastId) continue;  // no duplicates
        this.lastId = r.id;
        if (!this.accept || this.accept(r)) fresh.push(r);
      }
      if (!fresh.length) return;
      if (this.paused || this.hasNewer) this.queuePending(fresh);
      else this.append(fresh);
      this.schedule();
    }

    queuePending(recs) {
      for (const r of recs) this.pending.push(r);
      this.pendingCount += recs.length;
      if (this.pending.length > MAX_PENDING + TRIM_CHUNK) {
        this.pending.splice(0, this.pending.length - MAX_PENDING);
        this.pendingOverflow = true;
      }
    }

    applyPending() {
      if (this.pendingOverflow) { this.reload(); return; }  // too many to keep: start again at the tail
      const last = this.records.length ? this.records[this.records.length - 1].id : this.clearedAfter;
      const recs = this.pending.filter((r) => r.id > last);
      this.pending = [];
      this.pendingCount = 0;
      this.append(recs);
    }

    append(recs) {
      if (!recs.length) return;
      const a = this.records;
      for (let i = 0; i < recs.length; i++) a.push(recs[i]);
      if (a.length > MAX_RECORDS) {
        const drop = Math.min(a.length, a.length - MAX_RECORDS + TRIM_CHUNK);
        a.splice(0, drop);
        this.hasOlder = true;
        this.olderAnchor = a.length ? a[0].id : this.olderAnchor;
        if (!this.stick) this.shift -= drop * this.rowHeight;
      }
      this.schedule();
    }

    replaceRecords(recs) {
      this.records = recs;
      this.invalidate();
    }

    // -- user actions

    setActive(active) {
      this.active = active;
      if (!active) { this.stopStream(); if (this.conn !== "history") this.setConn("idle"); return; }
      if (!this.loaded) { this.reload(); return; }
      if (!this.historyTo && !this.es && !this.retryTimer && !this.loading) this.startStream();  // catch up from lastId
      this.schedule();
    }

    setPaused(paused) {
      this.paused = paused;
      if (!paused && !this.hasNewer) this.applyPending();
      this.schedule();
    }

    clear() {
      this.records = [];
      this.pending = [];
      this.pendingCount = 0;
      this.pendingOverflow = false;
      this.hasOlder = false;
      this.hasNewer = false;
      this.clearedAfter = this.lastId;
      this.stick = true;
      this.invalidate();
    }

    jumpToLatest() {
      if (this.hasNewer || this.pendingOverflow) { this.reload(); return; }
      this.stick = true;
      if (!this.paused) this.applyPending();
      this.schedule();
    }

    /** Selects the record `id` and shows its details; nothing happens when it is no longer in the list. */
    select(id) {
      const record = this.find(id);
      if (!record) return;
      this.selectedId = id;
      this.schedule();
      this.onSelect(record);
    }

    /** Moves the selection by delta rows (keyboard), keeping it on screen. */
    move(delta) {
      const n = this.records.length;
      if (!n) return;
      let i = this.selectedId === null ? -1 : this.indexOf(this.selectedId);
      if (i < 0) {
        const top = Math.floor(this.list.scrollTop / this.rowHeight);
        const bottom = Math.floor((this.list.scrollTop + this.list.clientHeight) / this.rowHeight) - 1;
        i = delta > 0 ? Math.max(0, top) : Math.min(n - 1, bottom);
      } else {
        i = Math.max(0, Math.min(n - 1, i + delta));
      }
      this.scrollToIndex(i);
      this.select(this.records[i].id);
    }

    scrollToIndex(i) {
      const list = this.list;
      const top = i * this.rowHeight;
      if (top < list.scrollTop) this.scrollTo(top);
      else if (top + this.rowHeight > list.scrollTop + list.clientHeight) this.scrollTo(top + this.rowHeight - list.clientHeight);
      this.stick = false;
      this.schedule();
    }

    scrollToTop() {
      this.stick = false;
      this.scrollTo(0);
      this.schedule();
    }

    indexOf(id) {
      const a = this.records;
      let lo = 0;
      let hi = a.length - 1;
      while (lo <= hi) {
        const mid = (lo + hi) >> 1;
        if (a[mid].id === id) return mid;
        if (a[mid].id < id) lo = mid + 1; else hi = mid - 1;
      }
      return -1;
    }

    find(id) {
      const i = this.indexOf(id);
      return i >= 0 ? this.records[i] : null;
    }

    setError(err) {
      this.error = err ? err.message || String(err) : null;
      if (this.errorEl) {
        this.errorEl.hidden = !this.error;
        this.errorEl.textContent = this.error || "";
      }
    }

    setConn(conn) {
      this.conn = conn;
      updateStatus();
    }

    // -- rendering

    schedule() {
      if (this.renderQueued) return;
      this.renderQueued = true;
      requestAnimationFrame(() => this.render());
    }

    /**
     * Every drawn row is redrawn at the next render (their content changes: new records or a new search). The rows
     * stay in the list until then: the list is never empty between an answer and the frame that draws it.
     */
    invalidate() {
      this.stale = true;
      this.schedule();
    }

    /** Scrolls the list from code; onScroll then knows the position was not the user's. */
    scrollTo(top) {
      this.list.scrollTop = top;
      this.programmaticTop = this.list.scrollTop;
    }

    onScroll() {
      const list = this.list;
      const atBottom = list.scrollTop + list.clientHeight >= list.scrollHeight - this.rowHeight / 2 - 1;
      this.stick = atBottom && !this.hasNewer;
      // Paging follows the user's scrolling only, not the programmatic scrolls of render() (after a time jump the
      // list shows the moment jumped to, at its end: that must not load what came after it, even when the user's
      // last input, choosing the time, was a moment ago).
      const programmatic = list.scrollTop === this.programmaticTop;
      if (!programmatic && performance.now() - lastUserInput < 1500) {
        if (list.scrollTop < this.rowHeight * OVERSCAN) this.loadOlder();
        if (atBottom && this.hasNewer) this.loadNewer();
      }
      this.schedule();
    }

    render() {
      this.renderQueued = false;
      const list = this.list;
      const rh = this.rowHeight;
      const recs = this.records;
      const n = recs.length;
      const total = n * rh;
      if (total !== this.spacerHeight) {
        this.spacer.style.height = total + "px";
        this.spacerHeight = total;
      }
      if (this.stick && !this.holding) {
        const bottom = Math.max(0, total - list.clientHeight);
        if (list.scrollTop !== bottom) this.scrollTo(bottom);
      } else if (this.shift) {
        this.scrollTo(Math.max(0, list.scrollTop + this.shift));
      }
      this.shift = 0;

      const top = list.scrollTop;
      const first = Math.max(0, Math.floor(top / rh) - OVERSCAN);
      const last = Math.min(n, Math.ceil((top + list.clientHeight) / rh) + OVERSCAN);
      const firstId = first < last ? recs[first].id : Infinity;
      const lastId = first < last ? recs[last - 1].id : -Infinity;

      // Rows that left the window go back to the pool (ids are ascending, so a range test does); after
      // invalidate(), all of them, to be filled again in this same frame.
      const stale = this.stale;
      this.stale = false;
      for (const [id, row] of this.rows) {
        if (stale || id < firstId || id > lastId) {
          this.rows.delete(id);
          this.free.push(row);
        }
      }
      for (let i = first; i < last; i++) {
        const rec = recs[i];
        let row = this.rows.get(rec.id);
        if (!row) {
          row = this.free.pop() || this.createRow();
          this.fillRow(row, rec);
          this.rows.set(rec.id, row);
          if (row.parentNode !== list) list.appendChild(row);
        }
        const y = i * rh;
        if (row._y !== y) { row.style.transform = "translateY(" + y + "px)"; row._y = y; }
        const selected = rec.id === this.selectedId;
        if (row._selected !== selected) { row.classList.toggle("selected", selected); row._selected = selected; }
      }
      // Rows left in the pool leave the list (a row taken again above stayed in it, and was only refilled).
      for (const row of this.free) if (row.parentNode) row.remove();
      if (this.free.length > 300) this.free.length = 300;

      if (this.emptyEl) {
        const empty = this.loaded && !this.loading && n === 0 && !this.error;
        this.emptyEl.hidden = !empty;
        if (empty) this.emptyEl.textContent = this.emptyText(this);
      }
      if (this.jumpEl) this.jumpEl.hidden = n === 0 || (this.stick && !this.hasNewer);
      this.onUpdate(this);
      if (this.loaded) markReady();
    }

    rowsInDom() { return this.rows.size; }
  }

  // ------------------------------------------------------------------ log rows and details

  function createLogRow() {
    const row = el("div", "log-row");
    row.setAttribute("role", "listitem");
    row._time = row.appendChild(el("span", "log-time"));
    const level = row.appendChild(el("span", "log-level"));
    row._level = level.appendChild(el("span", "lvl"));
    row._app = row.appendChild(el("span", "log-app"));
    row._label = row.appendChild(el("span", "log-label"));
    const text = row.appendChild(el("span", "log-text"));
    row._message = text.appendChild(el("span", "log-message"));
    row._meta = text.appendChild(el("span", "log-meta"));
    return row;
  }

  function fillLogRow(row, r) {
    const level = levelOf(r);
    row.dataset.id = String(r.id);
    row.dataset.level = level;
    row._time.textContent = clockOf(r);
    row._level.className = "lvl lvl-" + level;
    row._level.textContent = String(r.level || "");
    row._app.textContent = String(r.app || "");
    setHighlighted(row._label, String(r.label || ""));
    setHighlighted(row._message, rowMessageOf(r));
    setHighlighted(row._meta, metaOf(r));
  }

  function detailHead(titleNode, onClose) {
    const head = el("div", "detail-head");
    head.appendChild(titleNode);
    const close = el("button", "icon-button detail-close", "×");
    close.type = "button";
    close.title = "Close (Esc)";
    close.setAttribute("aria-label", "Close details");
    close.addEventListener("click", onClose);
    head.appendChild(close);
    return head;
  }

  function section(title, note) {
    const s = el("div", "detail-section");
    const h = s.appendChild(el("h3", null, title));
    if (note) h.appendChild(el("span", "h-note", note));
    return s;
  }

  function fieldList(pairs) {
    const dl = el("dl", "fields");
    for (const [name, value] of pairs) {
      if (value === null || value === undefined || value === "") continue;
      dl.appendChild(el("dt", null, name));
      dl.appendChild(el("dd", null, value));
    }
    return dl;
  }

  function showLogDetail(r) {
    const pane = $("log-detail");
    if (!r) { closeLogDetail(); return; }
    pane.textContent = "";
    const title = el("div", "detail-title");
    const level = levelOf(r);
    title.appendChild(el("span", "lvl lvl-" + level, String(r.level || "")));
    title.appendChild(document.createTextNode("  " + clockOf(r)));
    pane.appendChild(detailHead(title, closeLogDetail));

    const msg = section("Message");
    msg.appendChild(el("pre", "code detail-message", r.message === null || r.message === undefined ? "" : String(r.message)));
    pane.appendChild(msg);

    const fields = section("Record");
    const where = r.file ? String(r.file) + (r.line ? ":" + r.line : "") : "";
    fields.appendChild(fieldList([
      ["Time", r.time], ["Level", r.level], ["Label", r.label], ["App", r.app], ["Host", r.host],
      ["PID", r.pid], ["Source", r.source], ["Sequence", r.sequence], ["File", where],
      ["Function", r.function], ["ID", r.id],
    ]));
    pane.appendChild(fields);

    const meta = section("Metadata");
    const hasMeta = r.metadata && typeof r.metadata === "object" && Object.keys(r.metadata).length > 0;
    if (hasMeta) meta.appendChild(el("pre", "code detail-metadata", JSON.stringify(r.metadata, null, 2)));
    else meta.appendChild(el("p", "kv-empty", "No metadata"));
    pane.appendChild(meta);

    if (r.http && typeof r.http === "object") {
      const x = r.http;
      const hs = section("HTTP exchange");
      hs.appendChild(el("div", "detail-url", String(x.method || "") + " " + String(x.url || x.path || "")));
      hs.appendChild(fieldList([
        ["Status", typeof x.status === "number" ? String(x.status) : "no response"],
        ["Duration", formatMs(x.duration * 1000)],
        ["Error", x.error],
      ]));
      const actions = hs.appendChild(el("div", "detail-actions"));
      const open = actions.appendChild(el("button", "button small", "Open in HTTP tab"));
      open.type = "button";
      open.addEventListener("click", function () { openExchange(r); });
      pane.appendChild(hs);
    }
    pane.hidden = false;
  }

  function closeLogDetail() {
    $("log-detail").hidden = true;
    logsFeed.selectedId = null;
    logsFeed.schedule();
  }

  function logsEmptyText(feed) {
    if (feed.clearedAfter) return "Cleared. New records will appear here.";
    if (state.to) return "No records before this time match the filters.";
    if (state.app || state.level || state.label || state.q) return "No records match these filters.";
    return "No records yet. Waiting for apps to log…";
  }

  function updateLogsFooter(feed) {
    const footer = $("logs-footer");
    const parts = [formatCount(feed.records.length) + (feed.records.length === 1 ? " record" : " records")];
    if (feed.loading) parts.push("loading…");
    else if (feed.loadingMore === "older") parts.push("loading older…");
    else if (feed.loadingMore === "newer") parts.push("loading newer…");
    else if (feed.hasOlder) parts.push("scroll up for older");
    else if (feed.loaded && feed.records.length) parts.push(feed.clearedAfter ? "since Clear" : "start of results");
    if (feed.historyTo) parts.push("before " + new Date(feed.historyTo).toLocaleString());
    if (feed.hasNewer && !feed.historyTo) parts.push("newer records below");
    const key = parts.join("|") + "|" + feed.pendingCount;
    if (footer._key === key) return;
    footer._key = key;
    footer.textContent = "";
    for (const p of parts) footer.appendChild(el("span", null, p));
    if (feed.pendingCount && !feed.paused) footer.appendChild(el("span", "footer-pending", formatCount(feed.pendingCount) + " new"));
  }

  // ------------------------------------------------------------------ HTTP rows and details

  function createHttpRow() {
    const row = el("div", "http-row");
    row.setAttribute("role", "row");
    row._time = row.appendChild(el("span", "http-time"));
    row._method = row.appendChild(el("span", "http-method method"));
    const status = row.appendChild(el("span", "http-status"));
    row._status = status.appendChild(el("span", "status"));
    row._duration = row.appendChild(el("span", "http-duration"));
    row._url = row.appendChild(el("span", "http-url"));
    row._app = row.appendChild(el("span", "http-app"));
    return row;
  }

  function fillHttpRow(row, r) {
    const x = r.http || {};
    const cls = statusClass(x.status);
    row.className = "http-row status-" + cls;
    row._selected = false;  // className was reset
    row.dataset.id = String(r.id);
    row.dataset.status = typeof x.status === "number" ? String(x.status) : "failed";
    row._time.textContent = clockOf(r);
    row._method.textContent = String(x.method || "");
    row._status.textContent = typeof x.status === "number" ? String(x.status) : "ERR";
    const ms = typeof x.duration === "number" ? x.duration * 1000 : NaN;
    row._duration.textContent = formatMs(ms);
    row._duration.classList.toggle("slow", ms >= 1000);
    row._url.textContent = String(x.url || x.path || "");
    row._app.textContent = String(r.app || "");
  }

  function kvTable(headers) {
    const pairs = headerPairs(headers);
    if (!pairs.length) return el("p", "kv-empty", "No headers");
    const table = el("table", "kv-table");
    const body = table.appendChild(el("tbody"));
    for (const [name, value] of pairs) {
      const tr = body.appendChild(el("tr"));
      tr.appendChild(el("td", null, name));
      tr.appendChild(el("td", null, value));
    }
    return table;
  }

  function bodySection(title, text, bytes, truncated, headers, preClass) {
    const note = typeof bytes === "number" ? formatCount(bytes) + (bytes === 1 ? " byte" : " bytes") : "";
    const s = section(title, note);
    const body = formatBody(text, headers);
    s.appendChild(el("pre", preClass + (body.json ? " json" : ""), body.text));
    if (truncated) {
      s.appendChild(el("p", "truncated-note", "truncated, " + (typeof bytes === "number" ? bytes : "?") + " bytes in all"));
    }
    return s;
  }

  /** A shell-quoted curl command for the exchange (header values as logged, redactions included). */
  function curlCommand(x) {
    const q = function (s) { return "'" + String(s).replace(/'/g, "'\\''") + "'"; };
    const parts = ["curl"];
    if (x.method && x.method !== "GET") parts.push("-X", q(x.method));
    parts.push(q(x.url || x.path || ""));
    for (const [name, value] of headerPairs(x.requestHeaders)) parts.push("-H", q(name + ": " + value));
    if (x.requestBody !== null && x.requestBody !== undefined) parts.push("--data-raw", q(x.requestBody));
    return parts.join(" ");
  }

  function copyButton(label, getText) {
    const b = el("button", "button small", label);
    b.type = "button";
    b.addEventListener("click", function () {
      const done = function (ok) {
        b.textContent = ok ? "Copied" : "Copy failed";
        setTimeout(function () { b.textContent = label; }, 1200);
      };
      if (navigator.clipboard && navigator.clipboard.writeText) {
        navigator.clipboard.writeText(getText()).then(function () { done(true); }, function () { done(false); });
      } else {
        done(false);
      }
    });
    return b;
  }

  function showHttpDetail(r) {
    const pane = $("http-detail");
    if (!r || !r.http) { closeHttpDetail(); return; }
    const x = r.http;
    pane.textContent = "";
    const title = el("div", "detail-title");
    const cls = statusClass(x.status);
    title.appendChild(el("span", "status s-" + cls, typeof x.status === "number" ? String(x.status) : "ERR"));
    title.appendChild(document.createTextNode("  " + String(x.method || "") + " " + String(x.path || "")));
    pane.appendChild(detailHead(title, closeHttpDetail));

    const summary = section("Exchange");
    summary.appendChild(el("div", "detail-url", String(x.url || "")));
    if (x.error) summary.appendChild(el("div", "detail-error", String(x.error)));
    summary.appendChild(fieldList([
      ["Time", r.time], ["Duration", formatMs(x.duration * 1000)],
      ["Status", typeof x.status === "number" ? String(x.status) : "no response"],
      ["Host", x.host], ["App", r.app], ["From", [r.host, r.pid].filter(Boolean).join(" · ")], ["ID", r.id],
    ]));
    const actions = summary.appendChild(el("div", "detail-actions"));
    actions.appendChild(copyButton("Copy URL", function () { return String(x.url || ""); }));
    actions.appendChild(copyButton("Copy as cURL", function () { return curlCommand(x); }));
    pane.appendChild(summary);

    const reqHeaders = section("Request headers");
    reqHeaders.appendChild(kvTable(x.requestHeaders));
    pane.appendChild(reqHeaders);
    pane.appendChild(bodySection("Request body", x.requestBody, x.requestBodyBytes, x.requestBodyTruncated, x.requestHeaders, "body-request"));

    const respHeaders = section("Response headers");
    respHeaders.appendChild(kvTable(x.responseHeaders));
    pane.appendChild(respHeaders);
    pane.appendChild(bodySection("Response body", x.responseBody, x.responseBodyBytes, x.responseBodyTruncated, x.responseHeaders, "body-response"));
    pane.hidden = false;
    pane.parentElement.classList.add("detail-open");
  }

  function closeHttpDetail() {
    $("http-detail").hidden = true;
    $("http-detail").parentElement.classList.remove("detail-open");
    httpFeed.selectedId = null;
    httpFeed.schedule();
  }

  function httpEmptyText() {
    if (state.method || state.path || state.status || state.app) return "No HTTP exchanges match these filters.";
    return "No HTTP exchanges yet.";
  }

  function updateHttpFooter(feed) {
    const text = formatCount(feed.records.length) + (feed.records.length === 1 ? " exchange" : " exchanges") +
      (feed.pendingCount && !feed.paused ? " · " + formatCount(feed.pendingCount) + " new" : "");
    const node = $("http-count");
    if (node.textContent !== text) node.textContent = text;
  }

  /** Shows an exchange found in the Logs tab in the HTTP tab's detail pane. */
  function openExchange(r) {
    setTab("http");
    httpFeed.selectedId = r.id;
    showHttpDetail(r);
    httpFeed.schedule();
  }

  // ------------------------------------------------------------------ the two feeds

  const logsFeed = new Feed({
    name: "logs",
    list: $("log-list"),
    rowHeight: 24,
    rowClass: "log-row",
    params: logParams,
    createRow: createLogRow,
    fillRow: fillLogRow,
    onSelect: showLogDetail,
    onUpdate: function (feed) { updateLogsFooter(feed); if (currentFeed() === feed) updateStatus(); },
    emptyText: logsEmptyText,
    errorEl: $("logs-error"),
    emptyEl: $("log-empty"),
    jumpEl: $("log-jump"),
    onJump: function () { if (state.to) goLive(); else logsFeed.jumpToLatest(); },
  });

  const httpFeed = new Feed({
    name: "http",
    list: $("http-list"),
    rowHeight: 28,
    rowClass: "http-row",
    params: httpParams,
    // The API may not know path=: filter on the page as well.
    accept: function (r) {
      if (!r.http) return false;
      return !state.path || r.http.path === state.path;
    },
    createRow: createHttpRow,
    fillRow: fillHttpRow,
    onSelect: showHttpDetail,
    onUpdate: function (feed) { updateHttpFooter(feed); if (currentFeed() === feed) updateStatus(); },
    emptyText: httpEmptyText,
    errorEl: $("http-error"),
    emptyEl: $("http-empty"),
    jumpEl: $("http-jump"),
  });
  httpFeed.active = false;

  // ------------------------------------------------------------------ sources

  const sourcesPane = {
    list: [],
    nodes: new Map(),  // source id -> row element
    appsKey: "",

    async load() {
      try {
        const body = await api("/api/sources");
        this.set(Array.isArray(body.sources) ? body.sources : []);
      } catch (err) {
        // The feeds show the error; the list stays as it was.
      }
    },

    updateFromEvent(data) {
      try {
        const list = JSON.parse(data).sources;
        if (Array.isArray(list)) this.set(list);
      } catch (_) { /* ignore a bad event */ }
    },

    set(list) {
      this.list = list.filter(function (s) { return s && typeof s === "object"; });
      this.render();
      this.fillAppSelect();
    },

    isSelected(s) {
      return state.app !== "" && state.host !== "" && state.app === String(s.app) &&
        state.host === String(s.host) && state.pid === String(s.pid);
    },

    render() {
      const container = $("sources");
      const seen = new Set();
      const sorted = this.list.slice().sort(function (a, b) {
        return (b.live ? 1 : 0) - (a.live ? 1 : 0) || String(a.app).localeCompare(String(b.app));
      });
      for (const s of sorted) {
        const key = String(s.id);
        seen.add(key);
        let row = this.nodes.get(key);
        if (!row) { row = this.createRow(); this.nodes.set(key, row); }
        this.fillRow(row, s);
        container.appendChild(row);  // (re)appends in order
      }
      for (const [key, row] of this.nodes) if (!seen.has(key)) { row.remove(); this.nodes.delete(key); }
      $("sources-count").textContent = this.list.length ? String(this.list.length) : "";
      $("source-all").setAttribute("aria-pressed", String(!state.app && !state.host && !state.pid));
    },

    createRow() {
      const row = el("button", "source-row");
      row.type = "button";
      row.setAttribute("role", "listitem");
      const top = row.appendChild(el("div", "source-top"));
      row._dot = top.appendChild(el("span", "source-dot"));
      row._app = top.appendChild(el("span", "source-app"));
      row._state = top.appendChild(el("span", "source-state"));
      row._host = row.appendChild(el("div", "source-host"));
      const counts = row.appendChild(el("div", "source-counts"));
      row._records = counts.appendChild(el("span", "source-records"));
      row._lost = counts.appendChild(el("span", "source-lost"));
      row.addEventListener("click", () => this.toggle(row._source));
      return row;
    },

    fillRow(row, s) {
      row._source = s;
      row.dataset.app = String(s.app || "");
      row.dataset.host = String(s.host || "");
      row.dataset.pid = String(s.pid === undefined || s.pid === null ? "" : s.pid);
      row._dot.className = "source-dot " + (s.live ? "live" : "lost");
      row._app.textContent = String(s.app || "?");
      row._state.textContent = s.live ? "live" : "offline";
      row._host.textContent = String(s.host || "") + " · pid " + String(s.pid === undefined ? "?" : s.pid);
      row._records.textContent = formatCount(s.records) + " rec";
      row._lost.textContent = s.lost ? formatCount(s.lost) + " lost" : "";
      row.title = String(s.app || "") + " on " + String(s.host || "") + ", pid " + String(s.pid) +
        (s.lastSeen ? "\nlast seen " + String(s.lastSeen) : "");
      row.setAttribute("aria-pressed", String(this.isSelected(s)));
    },

    toggle(s) {
      if (!s) return;
      if (this.isSelected(s)) setSourceFilter("", "", "");
      else setSourceFilter(String(s.app || ""), String(s.host || ""), String(s.pid === undefined || s.pid === null ? "" : s.pid));
    },

    /** The app select lists every app once; rebuilt only when that set changes. */
    fillAppSelect() {
      const apps = Array.from(new Set(this.list.map(function (s) { return String(s.app || ""); }).filter(Boolean))).sort();
      if (state.app && apps.indexOf(state.app) < 0) apps.push(state.app);
      const key = apps.join("\u0000");
      const select = $("filter-app");
      if (key !== this.appsKey) {
        this.appsKey = key;
        while (select.options.length > 1) select.remove(1);
        for (const app of apps) {
          const option = el("option", null, app);
          option.value = app;
          select.appendChild(option);
        }
      }
      select.value = state.app;
    },
  };

  // ------------------------------------------------------------------ endpoints

  const endpointsPane = {
    timer: 0,
    nodes: new Map(),
    generation: 0,

    start() {
      this.stop();
      this.load();
      this.timer = setInterval(() => { if (document.visibilityState === "visible") this.load(); }, ENDPOINTS_REFRESH_MS);
    },

    stop() {
      if (this.timer) { clearInterval(this.timer); this.timer = 0; }
    },

    async load() {
      const gen = ++this.generation;
      let body;
      try {
        body = await api("/api/endpoints", sourceParams());
      } catch (err) {
        return;  // the table shows errors; keep the last list
      }
      if (gen !== this.generation) return;
      this.render(Array.isArray(body.endpoints) ? body.endpoints : []);
    },

    key(e) { return String(e.method) + " " + String(e.host) + " " + String(e.path); },

    render(list) {
      const container = $("endpoints");
      const seen = new Set();
      for (const e of list) {
        if (!e || typeof e !== "object") continue;
        const key = this.key(e);
        seen.add(key);
        let row = this.nodes.get(key);
        if (!row) { row = this.createRow(); this.nodes.set(key, row); }
        this.fillRow(row, e);
        container.appendChild(row);
      }
      for (const [key, row] of this.nodes) if (!seen.has(key)) { row.remove(); this.nodes.delete(key); }
      $("endpoints-count").textContent = list.length ? String(list.length) : "";
    },

    createRow() {
      const row = el("button", "endpoint-row");
      row.type = "button";
      row.setAttribute("role", "listitem");
      const top = row.appendChild(el("div", "endpoint-top"));
      row._method = top.appendChild(el("span", "method"));
      row._path = top.appendChild(el("span", "endpoint-path"));
      row._host = row.appendChild(el("div", "endpoint-host"));
      const stats = row.appendChild(el("div", "endpoint-stats"));
      row._count = stats.appendChild(el("span"));
      row._errors = stats.appendChild(el("span"));
      row._latency = stats.appendChild(el("span"));
      row.addEventListener("click", function () { toggleEndpoint(row.dataset.method, row.dataset.path); });
      return row;
    },

    fillRow(row, e) {
      row.dataset.method = String(e.method || "");
      row.dataset.path = String(e.path || "");
      row._method.textContent = String(e.method || "");
      row._path.textContent = String(e.path || "");
      row._host.textContent = String(e.host || "");
      row._count.textContent = formatCount(e.count) + "×";
      const rate = typeof e.errorRate === "number" ? e.errorRate : 0;
      row._errors.textContent = (rate * 100).toFixed(rate > 0 && rate < 0.1 ? 1 : 0) + "% err";
      row._errors.className = rate > 0 ? "bad" : "";
      row._latency.textContent = [e.p50, e.p90, e.p99].map(function (v) {
        return typeof v === "number" ? (v < 10 ? v.toFixed(1) : String(Math.round(v))) : "–";
      }).join("/") + " ms";
      row.title = "p50 / p90 / p99 latency; " + formatCount(e.errors) + " errors of " + formatCount(e.count);
      row.setAttribute("aria-pressed", String(state.method === String(e.method) && state.path === String(e.path)));
    },

    refreshSelection() {
      for (const row of this.nodes.values()) {
        row.setAttribute("aria-pressed", String(state.method === row.dataset.method && state.path === row.dataset.path));
      }
    },
  };

  function toggleEndpoint(method, path) {
    if (state.method === method && state.path === path) { state.method = ""; state.path = ""; }
    else { state.method = method; state.path = path; }
    applyHttpFilters();
  }

  function applyHttpFilters() {
    writeURL();
    endpointsPane.refreshSelection();
    const chip = $("endpoint-chip");
    chip.hidden = !(state.method || state.path);
    $("endpoint-chip-text").textContent = (state.method + " " + state.path).trim();
    $("http-filter-status").value = state.status;
    if (httpFeed.active) httpFeed.reload(); else httpFeed.loaded = false;
  }

  // ------------------------------------------------------------------ peers

  const peersPane = {
    timer: 0,
    generation: 0,
    servicesLoaded: false,
    shownService: null,  // the service type whose peers the table shows

    start() {
      this.stop();
      if (!this.servicesLoaded) this.loadServices();
      this.refresh();
      this.timer = setInterval(() => { if (document.visibilityState === "visible") this.refresh(); }, PEERS_REFRESH_MS);
    },

    stop() {
      if (this.timer) { clearInterval(this.timer); this.timer = 0; }
    },

    async loadServices() {
      let services = [];
      try {
        const body = await api("/api/services");
        services = Array.isArray(body.services) ? body.services.map(String) : [];
        this.servicesLoaded = true;
      } catch (err) {
        this.showError(err);
      }
      this.fillServices(services);
    },

    fillServices(services) {
      const select = $("peer-service");
      const list = services.slice();
      if (list.indexOf("_chirp._tcp") < 0) list.unshift("_chirp._tcp");
      if (list.indexOf(state.service) < 0) list.push(state.service);
      select.textContent = "";
      for (const name of list) {
        const option = el("option", null, name);
        option.value = name;
        select.appendChild(option);
      }
      select.value = state.service;
    },

    async refresh() {
      const gen = ++this.generation;
      // The first answer for a type may take a moment (the console starts looking for it then): say so meanwhile.
      if (this.shownService !== state.service) this.showEmpty("looking");
      let body;
      try {
        body = await api("/api/peers", { service: state.service });
      } catch (err) {
        if (gen === this.generation) this.showError(err);
        return;
      }
      if (gen !== this.generation) return;
      this.showError(null);
      this.render(Array.isArray(body.peers) ? body.peers : []);
      $("peers-updated").textContent = "Updated " + formatClock(new Date().toISOString()).slice(0, 8);
      markReady();
    },

    showError(err) {
      const node = $("peers-error");
      node.hidden = !err;
      node.textContent = err ? err.message : "";
    },

    render(peers) {
      const tbody = $("peers-table").tBodies[0];
      const rows = [];
      for (const p of peers) {
        if (!p || typeof p !== "object") continue;
        const tr = el("tr", "peer-row");
        tr.dataset.name = String(p.name || "");
        const name = tr.appendChild(el("td"));
        name.appendChild(el("div", "peer-name", String(p.name || "")));
        if (p.id) name.appendChild(el("div", "peer-id", String(p.id)));
        tr.appendChild(el("td", "mono", String(p.host || "")));
        const addresses = tr.appendChild(el("td", "mono"));
        const list = Array.isArray(p.addresses) ? p.addresses : [];
        list.forEach(function (a, i) {
          if (i) addresses.appendChild(el("br"));
          addresses.appendChild(document.createTextNode(String(a)));
        });
        const meta = tr.appendChild(el("td"));
        if (p.metadata && typeof p.metadata === "object") {
          for (const key of Object.keys(p.metadata)) {
            const v = p.metadata[key];
            meta.appendChild(el("span", "meta-chip", key + "=" + (typeof v === "string" ? v : JSON.stringify(v))));
          }
        }
        const connected = tr.appendChild(el("td"));
        connected.appendChild(el("span", "badge " + (p.connected ? "badge-yes" : "badge-no"), p.connected ? "connected" : "no"));
        rows.push(tr);
      }
      tbody.replaceChildren.apply(tbody, rows);
      this.shownService = state.service;
      this.showEmpty(rows.length === 0 ? "none" : "");
    },

    /**
     * What the table alone would not say: "looking" (no answer yet for the chosen type), "none" (no peer of it, and
     * what to try), or "" (peers are listed).
     */
    showEmpty(kind) {
      const node = $("peers-empty");
      node.hidden = !kind;
      const key = kind + " " + state.service;
      if (!kind || node._key === key) return;
      node._key = key;
      node.textContent = "";
      if (kind === "looking") {
        node.appendChild(el("p", "empty-title", "Looking for peers of " + state.service + "…"));
        return;
      }
      node.appendChild(el("p", "empty-title", "No peer advertises " + state.service + "."));
      node.appendChild(el("p", "empty-hint",
        "Peers show up here within 2 s of advertising this service type. Check the app's service type and " +
        "network interface (chirp browse " + state.service + " lists what this machine sees), or choose another " +
        "type above."));
    },
  };

  // ------------------------------------------------------------------ filters

  function syncControls() {
    $("filter-app").value = state.app;
    if ($("filter-app").value !== state.app) sourcesPane.fillAppSelect();
    $("filter-level").value = state.level;
    $("filter-label").value = state.label;
    $("filter-search").value = state.q;
    $("filter-regex").checked = state.regex;
    $("filter-time").value = isoToLocalInput(state.to);
    $("time-now").hidden = !state.to;
    $("http-filter-status").value = state.status;
    $("endpoint-chip").hidden = !(state.method || state.path);
    $("endpoint-chip-text").textContent = (state.method + " " + state.path).trim();
    validateRegex();
  }

  function validateRegex() {
    let ok = true;
    if (state.regex && state.q) {
      try { new RegExp(state.q); } catch (_) { ok = false; }
    }
    $("filter-search").classList.toggle("invalid", !ok);
  }

  /** A Logs filter changed: new URL, new highlighting, new data. */
  function applyLogFilters() {
    matcher = buildMatcher();
    validateRegex();
    logsFeed.historyTo = state.to;
    $("time-now").hidden = !state.to;
    writeURL();
    logsFeed.reload();
  }

  function setSourceFilter(app, host, pid) {
    state.app = app;
    state.host = host;
    state.pid = pid;
    sourcesPane.render();
    sourcesPane.fillAppSelect();
    applyLogFilters();
    endpointsPane.nodes.clear();
    $("endpoints").textContent = "";
    if (httpFeed.active) { httpFeed.reload(); endpointsPane.load(); } else httpFeed.loaded = false;
  }

  function goLive() {
    state.to = "";
    $("filter-time").value = "";
    applyLogFilters();
  }

  function bindFilters() {
    $("filter-app").addEventListener("change", function () { setSourceFilter(this.value, "", ""); });
    $("filter-level").addEventListener("change", function () { state.level = this.value; applyLogFilters(); });

    const labelChanged = debounce(function () { applyLogFilters(); }, 300);
    $("filter-label").addEventListener("input", function () { state.label = this.value.trim(); labelChanged(); });

    const searchChanged = debounce(function () { applyLogFilters(); }, 250);
    const search = $("filter-search");
    search.addEventListener("input", function () { state.q = this.value; searchChanged(); });
    search.addEventListener("keydown", function (e) { if (e.key === "Enter") searchChanged.now(); });
    $("filter-regex").addEventListener("change", function () { state.regex = this.checked; applyLogFilters(); });

    $("filter-time").addEventListener("change", function () { state.to = localInputToISO(this.value); applyLogFilters(); });
    $("time-now").addEventListener("click", goLive);

    $("pause").addEventListener("click", togglePause);
    $("clear").addEventListener("click", function () { logsFeed.clear(); closeLogDetail(); });
    $("source-all").addEventListener("click", function () { setSourceFilter("", "", ""); });

    $("http-filter-status").addEventListener("change", function () { state.status = this.value; applyHttpFilters(); });
    $("endpoint-chip-clear").addEventListener("click", function () { state.method = ""; state.path = ""; applyHttpFilters(); });

    $("peer-service").addEventListener("change", function () {
      state.service = this.value;
      writeURL();
      $("peers-table").tBodies[0].textContent = "";
      peersPane.refresh();
    });
  }

  // ------------------------------------------------------------------ status, pause, tabs, theme, keyboard

  let paused = false;

  function currentFeed() { return state.tab === "http" ? httpFeed : logsFeed; }

  /** #status: "live", "paused (N new)", "reconnecting…", "history", "connecting…". */
  function updateStatus() {
    const feed = currentFeed();
    let text;
    let kind;
    if (feed.conn === "reconnecting") { text = "reconnecting…"; kind = "reconnecting"; }
    else if (paused) { text = "paused (" + feed.pendingCount + " new)"; kind = "paused"; }
    else if (feed.historyTo) { text = "history"; kind = "history"; }
    else if (feed.conn === "live") { text = "live"; kind = "live"; }
    else if (feed.error) { text = "error"; kind = "reconnecting"; }
    else { text = "connecting…"; kind = "connecting"; }
    const status = $("status");
    if (status.textContent !== text) status.textContent = text;
    const indicator = $("live-indicator");
    if (indicator.dataset.state !== kind) indicator.dataset.state = kind;
  }

  function togglePause() {
    paused = !paused;
    logsFeed.setPaused(paused);
    httpFeed.setPaused(paused);
    const button = $("pause");
    button.textContent = paused ? "Resume" : "Pause";
    button.setAttribute("aria-pressed", String(paused));
    updateStatus();
  }

  const TABS = ["logs", "http", "peers"];

  function setTab(name) {
    if (TABS.indexOf(name) < 0) name = "logs";
    state.tab = name;
    for (const t of TABS) {
      $("tab-" + t).setAttribute("aria-selected", String(t === name));
      $("tab-" + t).tabIndex = t === name ? 0 : -1;
      $("panel-" + t).hidden = t !== name;
    }
    httpFeed.setActive(name === "http");
    if (name === "http") endpointsPane.start(); else endpointsPane.stop();
    if (name === "peers") peersPane.start(); else peersPane.stop();
    writeURL();
    updateStatus();
    currentFeed().schedule();
  }

  function currentTheme() {
    const set = document.documentElement.dataset.theme;
    if (set === "dark" || set === "light") return set;
    return window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
  }

  function initTheme() {
    let saved = null;
    try { saved = localStorage.getItem(THEME_KEY); } catch (_) { saved = null; }
    if (saved === "dark" || saved === "light") document.documentElement.dataset.theme = saved;
    labelThemeToggle();
  }

  function toggleTheme() {
    const next = currentTheme() === "dark" ? "light" : "dark";
    document.documentElement.dataset.theme = next;
    try { localStorage.setItem(THEME_KEY, next); } catch (_) { /* private mode */ }
    labelThemeToggle();
  }

  function labelThemeToggle() {
    const label = currentTheme() === "dark" ? "Switch to the light theme (t)" : "Switch to the dark theme (t)";
    $("theme-toggle").title = label;
    $("theme-toggle").setAttribute("aria-label", label);
  }

  function isTyping(target) {
    return !!(target && target.closest && target.closest("input, select, textarea, [contenteditable]"));
  }

  function onKeyDown(e) {
    lastUserInput = performance.now();
    const help = $("help");
    if (e.key === "Escape") {
      if (help.open) return;  // the dialog closes itself
      if (isTyping(e.target)) { e.target.blur(); return; }
      if (state.tab === "http") closeHttpDetail(); else closeLogDetail();
      return;
    }
    if (isTyping(e.target) || e.ctrlKey || e.metaKey || e.altKey || help.open) return;
    const feed = state.tab === "peers" ? null : currentFeed();
    let handled = true;
    switch (e.key) {
      case "/": setTab("logs"); $("filter-search").focus(); $("filter-search").select(); break;
      case "1": setTab("logs"); break;
      case "2": setTab("http"); break;
      case "3": setTab("peers"); break;
      case "j": case "ArrowDown": if (feed) feed.move(1); else handled = false; break;
      case "k": case "ArrowUp": if (feed) feed.move(-1); else handled = false; break;
      case "g": case "Home": if (feed) feed.scrollToTop(); else handled = false; break;
      case "G": case "End": if (feed) feed.jumpToLatest(); else handled = false; break;
      case "p": togglePause(); break;
      case "t": toggleTheme(); break;
      case "?": help.showModal(); break;
      default: handled = false;
    }
    if (handled) e.preventDefault();
  }

  function bindChrome() {
    for (const t of TABS) $("tab-" + t).addEventListener("click", function () { setTab(t); });
    $("tab-logs").parentElement.addEventListener("keydown", function (e) {
      if (e.key !== "ArrowLeft" && e.key !== "ArrowRight") return;
      const i = TABS.indexOf(state.tab);
      const next = TABS[(i + (e.key === "ArrowRight" ? 1 : TABS.length - 1)) % TABS.length];
      setTab(next);
      $("tab-" + next).focus();
      e.preventDefault();
      e.stopPropagation();
    });
    $("theme-toggle").addEventListener("click", toggleTheme);
    $("help-button").addEventListener("click", function () { $("help").showModal(); });
    document.addEventListener("keydown", onKeyDown);
    const input = function () { lastUserInput = performance.now(); };
    for (const type of ["wheel", "pointerdown", "touchstart"]) document.addEventListener(type, input, { passive: true, capture: true });
    if (window.matchMedia) {
      const mq = window.matchMedia("(prefers-color-scheme: dark)");
      if (mq.addEventListener) mq.addEventListener("change", labelThemeToggle);
    }
  }

  // ------------------------------------------------------------------ start-up

  window.chirpConsole = Object.freeze({
    stats: function () {
      return {
        rowsInDom: document.querySelectorAll("#log-list .log-row").length,
        recordsInMemory: logsFeed.records.length,
        firstPaintMs: firstPaintMs,
        httpRowsInDom: document.querySelectorAll("#http-list .http-row").length,
        httpRecordsInMemory: httpFeed.records.length,
        pending: logsFeed.pendingCount,
      };
    },
  });

  function start() {
    readStateFromURL();
    initTheme();
    syncControls();
    matcher = buildMatcher();
    bindFilters();
    bindChrome();
    sourcesPane.load();
    logsFeed.historyTo = state.to;
    logsFeed.reload();
    setTab(state.tab);
    writeURL();
  }

  start();
})();
