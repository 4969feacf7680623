/*
 * Chirp Console: the HTTP tab's exchanges: their rows and the details of one (headers, bodies, copy as cURL). Every
 * value of an exchange is put in as text; no URL of a record becomes a link.
 */
import { detailHead, fieldList, section } from "./details.js";
import { $, el } from "./dom.js";
import { Feed } from "./feed.js";
import { clockOf, curlCommand, formatBody, formatCount, formatMs, headerPairs, statusClass } from "./format.js";
import { httpParams, state } from "./state.js";

/**
 * The HTTP tab's feed (not streaming until the tab is shown) and details pane. hooks: onUpdate(feed) after each
 * render, onSources(data) and onConn(feed) from the feed.
 */
export function createHttpView(hooks) {
  const feed = new Feed({
    name: "http",
    list: $("http-list"),
    rowHeight: 28,
    rowClass: "http-row",
    params: httpParams,
    // The API may not know path=: filter on the page as well.
    accept: function (r) {
      if (!r.http) return false;
      return !state.path || r.http.path === state.path;
    },
    createRow: createHttpRow,
    fillRow: fillHttpRow,
    onSelect: showDetail,
    onUpdate: function (f) { updateHttpFooter(f); hooks.onUpdate(f); },
    onSources: hooks.onSources,
    onConn: hooks.onConn,
    emptyText: httpEmptyText,
    errorEl: $("http-error"),
    emptyEl: $("http-empty"),
    jumpEl: $("http-jump"),
  });
  feed.active = false;

  function showDetail(r) {
    const pane = $("http-detail");
    if (!r || !r.http) { closeDetail(); return; }
    const x = r.http;
    pane.textContent = "";
    const title = el("div", "detail-title");
    const cls = statusClass(x.status);
    title.appendChild(el("span", "status s-" + cls, typeof x.status === "number" ? String(x.status) : "ERR"));
    title.appendChild(document.createTextNode("  " + String(x.method || "") + " " + String(x.path || "")));
    pane.appendChild(detailHead(title, closeDetail));

    const summary = section("Exchange");
    summary.appendChild(el("div", "detail-url", String(x.url || "")));
    if (x.error) summary.appendChild(el("div", "detail-error", String(x.error)));
    summary.appendChild(fieldList([
      ["Time", r.time], ["Duration", formatMs(x.duration * 1000)],
      ["Status", typeof x.status === "number" ? String(x.status) : "no response"],
      ["Host", x.host], ["App", r.app], ["From", [r.host, r.pid].filter(Boolean).join(" · ")], ["ID", r.id],
    ]));
    const actions = summary.appendChild(el("div", "detail-actions"));
    actions.appendChild(copyButton("Copy URL", function () { return String(x.url || ""); }));
    actions.appendChild(copyButton("Copy as cURL", function () { return curlCommand(x); }));
    pane.appendChild(summary);

    const reqHeaders = section("Request headers");
    reqHeaders.appendChild(kvTable(x.requestHeaders));
    pane.appendChild(reqHeaders);
    pane.appendChild(bodySection("Request body", x.requestBody, x.requestBodyBytes, x.requestBodyTruncated, x.requestHeaders, "body-request"));

    const respHeaders = section("Response headers");
    respHeaders.appendChild(kvTable(x.responseHeaders));
    pane.appendChild(respHeaders);
    pane.appendChild(bodySection("Response body", x.responseBody, x.responseBodyBytes, x.responseBodyTruncated, x.responseHeaders, "body-response"));
    pane.hidden = false;
    pane.parentElement.classList.add("detail-open");
  }

  function closeDetail() {
    $("http-detail").hidden = true;
    $("http-detail").parentElement.classList.remove("detail-open");
    feed.selectedId = null;
    feed.schedule();
  }

  /** Shows an exchange found in the Logs tab in the detail pane (the HTTP tab is shown first). */
  function showExchange(r) {
    feed.selectedId = r.id;
    showDetail(r);
    feed.schedule();
  }

  return { feed: feed, showDetail: showDetail, closeDetail: closeDetail, showExchange: showExchange };
}

function createHttpRow() {
  const row = el("div", "http-row");
  row.setAttribute("role", "row");
  row._time = row.appendChild(el("span", "http-time"));
  row._method = row.appendChild(el("span", "http-method method"));
  const status = row.appendChild(el("span", "http-status"));
  row._status = status.appendChild(el("span", "status"));
  row._duration = row.appendChild(el("span", "http-duration"));
  row._url = row.appendChild(el("span", "http-url"));
  row._app = row.appendChild(el("span", "http-app"));
  return row;
}

function fillHttpRow(row, r) {
  const x = r.http || {};
  const cls = statusClass(x.status);
  row.className = "http-row status-" + cls;
  row._selected = false;  // className was reset
  row.dataset.id = String(r.id);
  row.dataset.status = typeof x.status === "number" ? String(x.status) : "failed";
  row._time.textContent = clockOf(r);
  row._method.textContent = String(x.method || "");
  row._status.textContent = typeof x.status === "number" ? String(x.status) : "ERR";
  const ms = typeof x.duration === "number" ? x.duration * 1000 : NaN;
  row._duration.textContent = formatMs(ms);
  row._duration.classList.toggle("slow", ms >= 1000);
  row._url.textContent = String(x.url || x.path || "");
  row._app.textContent = String(r.app || "");
}

function kvTable(headers) {
  const pairs = headerPairs(headers);
  if (!pairs.length) return el("p", "kv-empty", "No headers");
  const table = el("table", "kv-table");
  const body = table.appendChild(el("tbody"));
  for (const [name, value] of pairs) {
    const tr = body.appendChild(el("tr"));
    tr.appendChild(el("td", null, name));
    tr.appendChild(el("td", null, value));
  }
  return table;
}

function bodySection(title, text, bytes, truncated, headers, preClass) {
  const note = typeof bytes === "number" ? formatCount(bytes) + (bytes === 1 ? " byte" : " bytes") : "";
  const s = section(title, note);
  const body = formatBody(text, headers);
  s.appendChild(el("pre", preClass + (body.json ? " json" : ""), body.text));
  if (truncated) {
    s.appendChild(el("p", "truncated-note", "truncated, " + (typeof bytes === "number" ? bytes : "?") + " bytes in all"));
  }
  return s;
}

function copyButton(label, getText) {
  const b = el("button", "button small", label);
  b.type = "button";
  b.addEventListener("click", function () {
    const done = function (ok) {
      b.textContent = ok ? "Copied" : "Copy failed";
      setTimeout(function () { b.textContent = label; }, 1200);
    };
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(getText()).then(function () { done(true); }, function () { done(false); });
    } else {
      done(false);
    }
  });
  return b;
}

function httpEmptyText() {
  if (state.method || state.path || state.status || state.app) return "No HTTP exchanges match these filters.";
  return "No HTTP exchanges yet.";
}

function updateHttpFooter(feed) {
  const text = formatCount(feed.records.length) + (feed.records.length === 1 ? " exchange" : " exchanges") +
    (feed.pendingCount && !feed.paused ? " · " + formatCount(feed.pendingCount) + " new" : "");
  const node = $("http-count");
  if (node.textContent !== text) node.textContent = text;
}
