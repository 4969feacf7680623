/*
 * Chirp Console: the view's state (tab and filters), read from the page URL at start and written back to it on every
 * change, so that a URL shows the same view again; and the filter parameters of the API requests made from it.
 */
import { LEVELS, localInputToISO } from "./format.js";

const pageURL = new URL(location.href);
export const token = pageURL.searchParams.get("token") || "";

/** The view's state; mirrored into the page URL (shareable) by writeURL(). */
export const state = {
  tab: "logs",
  app: "", host: "", pid: "",                 // source filter (app alone, or app+host+pid)
  level: "", label: "", q: "", regex: false,   // Logs filters
  to: "",                                      // time jump (ISO), Logs
  method: "", path: "", status: "",            // HTTP filters
  service: "_chirp._tcp",                      // Peers
};

export function readStateFromURL() {
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

export function writeURL() {
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

export function sourceParams() {
  return { app: state.app, host: state.host, pid: state.pid };
}

export function logParams() {
  const p = sourceParams();
  p.level = state.level;
  p.label = state.label;
  if (state.q.trim()) {
    if (state.regex) p.regex = state.q; else p.q = state.q.trim();
  }
  return p;
}

export function httpParams() {
  const p = sourceParams();
  p.http = "1";
  p.method = state.method;
  p.path = state.path;
  p.status = state.status;
  return p;
}
