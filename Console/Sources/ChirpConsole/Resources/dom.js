/*
 * Chirp Console: building the page. Everything that comes from the API is untrusted: it goes into the page only as
 * text (textContent, createTextNode) or as non-URL attributes (setAttribute / dataset). el() is the way in; no module
 * of the page uses an API that parses HTML, and no record URL becomes a link.
 */

export function $(id) { return document.getElementById(id); }

/** A new element with an optional class and text (always as text). */
export function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

export function debounce(fn, ms) {
  let timer = 0;
  const run = function () { timer = 0; fn(); };
  const debounced = function () { clearTimeout(timer); timer = setTimeout(run, ms); };
  debounced.now = function () { clearTimeout(timer); run(); };
  return debounced;
}
