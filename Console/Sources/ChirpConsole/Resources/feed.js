/*
 * Chirp Console: the Feed, the list that the Logs and HTTP tabs show. It loads pages of records from the API, follows
 * the live stream, and draws only the rows on screen; what a row shows is its view's (logs.js, http.js).
 */
import { markReady, sinceUserInput } from "./activity.js";
import { api } from "./api.js";
import { el } from "./dom.js";
import { LiveStream } from "./live.js";

const MAX_RECORDS = 50000;   // records kept in memory by one list; the oldest are dropped
const TRIM_CHUNK = 2000;     // ...in chunks, so that the array is not spliced on every event
const MAX_PENDING = 50000;   // records held while paused; past that, resume reloads
const PAGE_SIZE = 1000;      // records per request (the API's maximum)
const OVERSCAN = 10;         // rows drawn above and below the visible ones

/**
 * A list of records, newest at the bottom, that is
 *  - virtualised: fixed row height; only the visible rows (plus OVERSCAN) are in the DOM,
 *    row elements are recycled; all DOM work happens in one requestAnimationFrame;
 *  - live: its LiveStream (live.js) appends new records; reopened with after=<last id> on errors;
 *  - paged: scrolling to the top loads older records (before=); at most MAX_RECORDS are
 *    kept; when the newest had to be dropped (or after a time jump), scrolling to the
 *    bottom loads newer ones (after=) until it is caught up with the live tail.
 */
export class Feed {
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
    this.onSources = o.onSources || function () {};  // (data) of the stream's `sources` events
    this.onConn = o.onConn || function () {};        // (feed) when `conn` changes

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
    this.onConn(this);
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
    if (!programmatic && sinceUserInput() < 1500) {
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
