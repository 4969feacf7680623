/*
 * Chirp Console: the drawing of a list of records (the Logs and HTTP tabs'): only the rows on screen are in the DOM.
 * What a row shows is its view's (logs.js, http.js); which records the list holds is its feed's (feed.js).
 */
import { sinceUserInput } from "./activity.js";
import { el } from "./dom.js";

const OVERSCAN = 10;         // rows drawn above and below the visible ones

/**
 * A list of records, ascending by id, newest at the bottom, drawn virtualised: fixed row height; only the visible
 * rows (plus OVERSCAN) are in the DOM, row elements are recycled; all DOM work happens in one requestAnimationFrame.
 * It follows the bottom while `stick` is true, and keeps the selection and the row a pointer button went down on.
 *
 * o: list (the scrolling element), rowHeight, rowClass, createRow(), fillRow(row, record), records() (the records, by
 * the array the feed holds now), onSelect(record) when a record is selected, onScroll({atBottom, nearTop, byUser})
 * after each scroll (byUser: the user scrolled, not render()), onRender() after each render.
 */
export class VirtualList {
  constructor(o) {
    this.list = o.list;
    this.rowHeight = o.rowHeight;
    this.rowClass = o.rowClass;
    this.createRow = o.createRow;
    this.fillRow = o.fillRow;
    this.records = o.records;
    this.onSelect = o.onSelect;
    this.onScroll = o.onScroll;
    this.onRender = o.onRender;

    this.rows = new Map();           // id -> row element in the DOM
    this.free = [];                  // detached row elements for reuse
    this.spacer = el("div", "vlist-spacer");
    this.list.appendChild(this.spacer);
    this.spacerHeight = -1;

    this.stick = true;               // follow the bottom
    this.shift = 0;                  // pixels to move scrollTop by at the next render
    this.selectedId = null;
    this.pressedId = null;           // the record a pointer button went down on (a click selects it)
    this.holding = false;            // a button is down on a row: the list does not follow the tail
    this.stale = false;              // every drawn row is redrawn at the next render (new records or search)
    this.renderQueued = false;

    this.bind();
  }

  bind() {
    const self = this;
    this.list.addEventListener("scroll", function () { self.scrolled(); }, { passive: true });
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
  }

  /** The rows on screen moved by n rows (n > 0: records were put above them): the list scrolls with them. */
  moveRows(n) {
    this.shift += n * this.rowHeight;
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
    const recs = this.records();
    const n = recs.length;
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
    this.select(recs[i].id);
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
    const a = this.records();
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
    return i >= 0 ? this.records()[i] : null;
  }

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

  /** Scrolls the list from code; scrolled() then knows the position was not the user's. */
  scrollTo(top) {
    this.list.scrollTop = top;
    this.programmaticTop = this.list.scrollTop;
  }

  scrolled() {
    const list = this.list;
    // Paging follows the user's scrolling only, not the programmatic scrolls of render() (after a time jump the
    // list shows the moment jumped to, at its end: that must not load what came after it, even when the user's
    // last input, choosing the time, was a moment ago).
    const programmatic = list.scrollTop === this.programmaticTop;
    this.onScroll({
      atBottom: list.scrollTop + list.clientHeight >= list.scrollHeight - this.rowHeight / 2 - 1,
      nearTop: list.scrollTop < this.rowHeight * OVERSCAN,
      byUser: !programmatic && sinceUserInput() < 1500,
    });
    this.schedule();
  }

  render() {
    this.renderQueued = false;
    const list = this.list;
    const rh = this.rowHeight;
    const recs = this.records();
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

    this.onRender();
  }
}
