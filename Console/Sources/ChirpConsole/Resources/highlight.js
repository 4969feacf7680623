/*
 * Chirp Console: the search's matches shown in the rows, built from text nodes and <mark> elements (never markup).
 */
import { el } from "./dom.js";
import { state } from "./state.js";

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

/** The search changed: what setHighlighted marks from now on. */
export function updateMatcher() { matcher = buildMatcher(); }

/** Puts `text` into `node` as text nodes, with each match of the search in a <mark>. */
export function setHighlighted(node, text) {
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
