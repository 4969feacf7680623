/*
 * Chirp Console: the Feed, the records of the list that the Logs and HTTP tabs show: the pages it loads from the API
 * and the records of its live stream (live.js). Its VirtualList (vlist.js) draws them; what a row shows is its view's
 * (logs.js, http.js).
 */
import { markReady } from "./activity.js";
import { api } from "./api.js";
import { LiveStream } from "./live.js";
import { VirtualList } from "./vlist.js";

const MAX_RECORDS = 50000;   // records kept in memory by one list; the oldest are dropped
const TRIM_CHUNK = 2000;     // ...in chunks, so that the array is not spliced on every event
const MAX_PENDING = 50000;   // records held while paused; past that, resume reloads
const PAGE_SIZE = 1000;      // records per request (the API's maximum)

/**
 * The records of a list, ascending by id, newest at the bottom, that is
 *  - drawn by a VirtualList (vlist.js): only the rows on screen are in the DOM;
 *  - live: its LiveStream (live.js) appends new records; reopened with after=<last id> on errors;
 *  - paged: scrolling to the top loads older records (before=); at most MAX_RECORDS are
 *    kept; when the newest had to be dropped (or after a time jump), scrolling to the
 *    bottom loads newer ones (after=) until it is caught up with the live tail.
 */
export class Feed {
  constructor(o) {
    this.name = o.name;
    this.params = o.params;          // () => filter parameters
    this.accept = o.accept || null;  // optional client-side filter
    this.onUpdate = o.onUpdate || function () {};
    this.emptyText = o.emptyText;
    this.errorEl = o.errorEl;
    this.emptyEl = o.emptyEl;
    this.jumpEl = o.jumpEl;
    this.onJump = o.onJump || null;
    this.onSources = o.onSources || function () {};  // (data) of the stream's `sources` events
    this.onConn = o.onConn || function () {};        // (feed) when `conn` changes

    this.records = [];               // ascending by id

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

    this.conn = "idle";              // idle | connecting | live | reconnecting | history
    this.live = new LiveStream({
      query: () => { const params = this.params(); params.after = this.lastId; return params; },
      onOpen: () => { this.setConn("live"); },
      onRecords: (data) => { this.onStreamRecords(data); },
      onSources: (data) => { this.onSources(data); },
      onDown: () => { this.setConn("reconnecting"); },
    });
    this.generation = 0;             // bumped by reload(): late answers are ignored
    this.abort = null;

    this.view = new VirtualList({
      list: o.list,
      rowHeight: o.rowHeight,
      rowClass: o.rowClass,
      createRow: o.createRow,
      fillRow: o.fillRow,
      records: () => this.records,
      onSelect: o.onSelect,
      onScroll: (at) => { this.scrolled(at); },
      onRender: () => { this.rendered(); },
    });
    if (this.jumpEl) {
      this.jumpEl.addEventListener("click", () => {
        if (this.onJump) this.onJump(); else this.jumpToLatest();
      });
    }
  }

  /** The selected record's id (null: none); schedule() shows a change. */
  get selectedId() { return this.view.selectedId; }
  set selectedId(id) { this.view.selectedId = id; }

  // -- loading

  /** Fetches the latest page (or the page before historyTo) and (re)starts the stream. */
  async reload() {
    const gen = ++this.generation;
    this.live.stop();
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
        this.live.retry(() => { this.reload(); });
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
    this.view.stick = true;  // show the end; after a time jump that is the moment jumped to
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
      this.view.moveRows(recs.length);
      if (this.records.length > MAX_RECORDS) {
        this.records.length = MAX_RECORDS;  // drop the newest; fetch them again at the bottom
        this.newerAnchor = this.records[this.records.length - 1].id;
        this.hasNewer = true;
        this.view.stick = false;
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

  /** Opens the stream after the last id seen; the status stays "reconnecting" until it is open. */
  startStream() {
    this.live.open();
    if (this.conn !== "reconnecting") this.setConn("connecting");
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
      if (!this.view.stick) this.view.moveRows(-drop);
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
    if (!active) { this.live.stop(); if (this.conn !== "history") this.setConn("idle"); return; }
    if (!this.loaded) { this.reload(); return; }
    if (!this.historyTo && this.live.idle && !this.loading) this.startStream();  // catch up from lastId
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
    this.view.stick = true;
    this.invalidate();
  }

  jumpToLatest() {
    if (this.hasNewer || this.pendingOverflow) { this.reload(); return; }
    this.view.stick = true;
    if (!this.paused) this.applyPending();
    this.schedule();
  }

  /** Moves the selection by delta rows (keyboard), keeping it on screen. */
  move(delta) { this.view.move(delta); }

  scrollToTop() { this.view.scrollToTop(); }

  setError(err) {
    this.error = err ? err.message || String(err) : null;
    if (this.errorEl) {
      this.errorEl.hidden = !this.error;
      this.errorEl.textContent = this.error || "";
    }
  }

  setConn(conn) {
    this.conn = conn;
    this.onConn(this);
  }

  // -- drawing (vlist.js)

  schedule() { this.view.schedule(); }

  /** Every drawn row is redrawn at the next render (new records, or a new search). */
  invalidate() { this.view.invalidate(); }

  /** After each scroll: follow the bottom when there; load older or newer pages when the user scrolled to an end. */
  scrolled(at) {
    this.view.stick = at.atBottom && !this.hasNewer;
    if (at.byUser) {
      if (at.nearTop) this.loadOlder();
      if (at.atBottom && this.hasNewer) this.loadNewer();
    }
  }

  /** After each render: the empty text, the jump button, the owner's onUpdate. */
  rendered() {
    const n = this.records.length;
    if (this.emptyEl) {
      const empty = this.loaded && !this.loading && n === 0 && !this.error;
      this.emptyEl.hidden = !empty;
      if (empty) this.emptyEl.textContent = this.emptyText(this);
    }
    if (this.jumpEl) this.jumpEl.hidden = n === 0 || (this.view.stick && !this.hasNewer);
    this.onUpdate(this);
    if (this.loaded) markReady();
  }
}
