/*
 * Chirp Console: the live stream of a list: the EventSource of /api/stream, reopened after errors on a backoff
 * schedule. What it receives goes to its owner (feed.js) as it came: the owner parses it, and puts it into the page as
 * text only.
 */
import { streamURL } from "./api.js";

const FIRST_DELAY = 1000;   // ms before the first retry after the stream (or the server) went away
const MAX_DELAY = 15000;    // ...doubled at each retry up to this; back to FIRST_DELAY when a stream opens

/**
 * One live stream at a time. o: query() the stream's parameters (asked at each opening, so that a reopened stream
 * starts after the last record seen), onOpen() when it is open, onRecords(data) and onSources(data) with the raw data
 * of its events, onDown() when it failed and will be reopened (after the next delay of the schedule).
 *
 * Its timer is also the owner's for retrying a failed page load on the same schedule (retry()): stop() cancels
 * either, and `idle` is true when neither a stream nor a retry is under way.
 */
export class LiveStream {
  constructor(o) {
    this.query = o.query;
    this.onOpen = o.onOpen;
    this.onRecords = o.onRecords;
    this.onSources = o.onSources;
    this.onDown = o.onDown;
    this.es = null;
    this.timer = 0;
    this.delay = FIRST_DELAY;
  }

  get idle() { return !this.es && !this.timer; }

  /** Opens the stream (closing the one before, and cancelling a retry). */
  open() {
    this.stop();
    const es = new EventSource(streamURL(this.query()));
    this.es = es;
    es.addEventListener("open", () => {
      if (this.es !== es) return;
      this.delay = FIRST_DELAY;
      this.onOpen();
    });
    es.addEventListener("records", (e) => { if (this.es === es) this.onRecords(e.data); });
    es.addEventListener("sources", (e) => { if (this.es === es) this.onSources(e.data); });
    es.addEventListener("error", () => {
      if (this.es !== es) return;
      // EventSource would reconnect by itself with the old after=; reopen it with the last id seen.
      this.stop();
      this.onDown();
      this.retry(() => this.open());
    });
  }

  /** Closes the stream and cancels a retry. */
  stop() {
    if (this.es) { this.es.close(); this.es = null; }
    if (this.timer) { clearTimeout(this.timer); this.timer = 0; }
  }

  /** Calls fn after the next delay of the schedule (stop() or open() cancels it). */
  retry(fn) {
    if (this.timer) clearTimeout(this.timer);
    const delay = this.delay;
    this.delay = Math.min(this.delay * 2, MAX_DELAY);
    this.timer = setTimeout(() => { this.timer = 0; fn(); }, delay);
  }
}
