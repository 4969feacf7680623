/*
 * Chirp Console: API values as display text. Pure functions of their arguments: they return strings (or plain
 * objects of strings), never markup; the page puts them in as text (dom.js).
 */

export const LEVELS = ["trace", "debug", "info", "notice", "warning", "error", "critical"];
const ROW_TEXT_MAX = 1000;   // characters of a message drawn in a row (the details show all)

export function pad(n, width) { return String(n).padStart(width, "0"); }

/** "HH:MM:SS.mmm" in local time; the ISO text itself when it does not parse. */
export function formatClock(iso) {
  const d = new Date(iso);
  if (isNaN(d.getTime())) return String(iso || "");
  return pad(d.getHours(), 2) + ":" + pad(d.getMinutes(), 2) + ":" + pad(d.getSeconds(), 2) +
    "." + pad(d.getMilliseconds(), 3);
}

export function formatCount(n) { return typeof n === "number" ? n.toLocaleString("en-US") : "–"; }

export function formatMs(ms) {
  if (typeof ms !== "number" || !isFinite(ms)) return "–";
  if (ms < 10) return ms.toFixed(1) + " ms";
  if (ms < 10000) return Math.round(ms).toLocaleString("en-US") + " ms";
  return (ms / 1000).toFixed(1) + " s";
}

/**
 * A device fingerprint's short form, as Fingerprint.short writes it ("chirp:" and its first 8 characters, a dash
 * between: "chirp:abcd-efgh"), for columns; "" when there is none. The full form goes in the title.
 */
export function shortFingerprint(fingerprint) {
  if (typeof fingerprint !== "string" || !fingerprint) return "";
  return fingerprint.slice(0, "chirp:".length + 9);
}

/** The console's trust in a device: "trusted", "not trusted", or "" when the API says nothing (no fingerprint). */
export function trustText(trusted) {
  if (trusted === true) return "trusted";
  if (trusted === false) return "not trusted";
  return "";
}

/** Metadata as compact `key=value` text; nested values as JSON. */
export function metadataText(meta) {
  if (!meta || typeof meta !== "object") return "";
  const parts = [];
  for (const key of Object.keys(meta)) {
    const v = meta[key];
    parts.push(key + "=" + (typeof v === "string" ? v : JSON.stringify(v)));
  }
  return parts.join(" ");
}

/** The level as a known name (for classes and data-level), "unknown" otherwise. */
export function levelOf(record) {
  const l = String(record.level || "").toLowerCase();
  return LEVELS.indexOf(l) >= 0 ? l : "unknown";
}

/** "2xx".."5xx", or "failed" when the exchange has no status. */
export function statusClass(status) {
  if (typeof status !== "number") return "failed";
  const c = Math.floor(status / 100);
  return c >= 1 && c <= 5 ? c + "xx" : "failed";
}

// Derived texts are computed once per record and kept on it.
export function clockOf(r) { return r._clock || (r._clock = formatClock(r.time)); }
export function metaOf(r) { return r._meta !== undefined ? r._meta : (r._meta = metadataText(r.metadata)); }
export function rowMessageOf(r) {
  if (r._msg === undefined) {
    const m = String(r.message === undefined || r.message === null ? "" : r.message);
    r._msg = m.length > ROW_TEXT_MAX ? m.slice(0, ROW_TEXT_MAX) + "…" : m;
  }
  return r._msg;
}

/** A body as display text: JSON pretty-printed with 2 spaces, anything else as it is. */
export function formatBody(text, headers) {
  if (text === null || text === undefined) return { text: "", json: false };
  const s = String(text);
  const t = s.trim();
  const jsonType = headerValue(headers, "content-type").toLowerCase().indexOf("json") >= 0;
  if (jsonType || t.startsWith("{") || t.startsWith("[")) {
    try { return { text: JSON.stringify(JSON.parse(t), null, 2), json: true }; } catch (_) { /* not JSON */ }
  }
  return { text: s, json: false };
}

export function headerPairs(headers) {
  if (Array.isArray(headers)) return headers.filter(Array.isArray).map(function (p) { return [String(p[0]), String(p[1])]; });
  if (headers && typeof headers === "object") return Object.keys(headers).map(function (k) { return [k, String(headers[k])]; });
  return [];
}

export function headerValue(headers, name) {
  for (const pair of headerPairs(headers)) if (pair[0].toLowerCase() === name) return pair[1];
  return "";
}

/** A shell-quoted curl command for the exchange (header values as logged, redactions included). */
export function curlCommand(x) {
  const q = function (s) { return "'" + String(s).replace(/'/g, "'\\''") + "'"; };
  const parts = ["curl"];
  if (x.method && x.method !== "GET") parts.push("-X", q(x.method));
  parts.push(q(x.url || x.path || ""));
  for (const [name, value] of headerPairs(x.requestHeaders)) parts.push("-H", q(name + ": " + value));
  if (x.requestBody !== null && x.requestBody !== undefined) parts.push("--data-raw", q(x.requestBody));
  return parts.join(" ");
}

/** datetime-local value (local time) <-> ISO 8601 (UTC). */
export function localInputToISO(value) {
  if (!value) return "";
  const d = new Date(value);
  return isNaN(d.getTime()) ? "" : d.toISOString();
}
export function isoToLocalInput(iso) {
  const d = new Date(iso);
  if (!iso || isNaN(d.getTime())) return "";
  return d.getFullYear() + "-" + pad(d.getMonth() + 1, 2) + "-" + pad(d.getDate(), 2) + "T" +
    pad(d.getHours(), 2) + ":" + pad(d.getMinutes(), 2) + ":" + pad(d.getSeconds(), 2);
}
