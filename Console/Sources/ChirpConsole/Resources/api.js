/*
 * Chirp Console: the console's JSON API and the URL of its live stream (Docs/Console.md). What it returns is
 * untrusted: the views put it into the page as text only.
 */
import { token } from "./state.js";

function apiURL(path, params) {
  const u = new URL(path, location.origin);
  for (const key of Object.keys(params || {})) {
    const v = params[key];
    if (v !== "" && v !== null && v !== undefined) u.searchParams.set(key, String(v));
  }
  return u;
}

/** GET a JSON API; the token goes in the Authorization header. Throws Error with .status. */
export async function api(path, params, signal) {
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
export function streamURL(params) {
  const u = apiURL("/api/stream", params);
  if (token) u.searchParams.set("token", token);
  return u.toString();
}
