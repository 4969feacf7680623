/*
 * Chirp Console: when the page first showed its data (body[data-ready], for the browser test and stats()), and when
 * the user last scrolled, pressed or typed (paging follows the user's scrolling only).
 */

let firstPaintMs = null;
let lastUserInput = -Infinity;  // performance.now() of the last wheel/key/pointer input (none yet: -Infinity, not 0, or the first 1.5 s after loading would count as input)

export function markReady() {
  if (firstPaintMs !== null) return;
  firstPaintMs = Math.round(performance.now());
  document.body.dataset.ready = "1";
}

/** Milliseconds from the page's start to its first data, or null before then. */
export function firstPaint() { return firstPaintMs; }

export function noteUserInput() { lastUserInput = performance.now(); }

/** Milliseconds since the user's last input (Infinity before the first). */
export function sinceUserInput() { return performance.now() - lastUserInput; }
