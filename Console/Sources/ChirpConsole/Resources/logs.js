/*
 * Chirp Console: the Logs tab: its rows, the details of a record, and its footer. Every value of a record is put in as
 * text; search matches are marked with <mark> elements around text nodes (highlight.js).
 */
import { detailHead, fieldList, section } from "./details.js";
import { $, el } from "./dom.js";
import { Feed } from "./feed.js";
import { clockOf, formatCount, formatMs, levelOf, metaOf, rowMessageOf } from "./format.js";
import { setHighlighted } from "./highlight.js";
import { logParams, state } from "./state.js";

/**
 * The Logs tab's feed and details pane. hooks: onUpdate(feed) after each render, onSources(data) and onConn(feed)
 * from the feed, goLive() to leave a time jump, openExchange(record) to show a record's exchange in the HTTP tab.
 */
export function createLogsView(hooks) {
  const feed = new Feed({
    name: "logs",
    list: $("log-list"),
    rowHeight: 24,
    rowClass: "log-row",
    params: logParams,
    createRow: createLogRow,
    fillRow: fillLogRow,
    onSelect: showDetail,
    onUpdate: function (f) { updateLogsFooter(f); hooks.onUpdate(f); },
    onSources: hooks.onSources,
    onConn: hooks.onConn,
    emptyText: logsEmptyText,
    errorEl: $("logs-error"),
    emptyEl: $("log-empty"),
    jumpEl: $("log-jump"),
    onJump: function () { if (state.to) hooks.goLive(); else feed.jumpToLatest(); },
  });

  function showDetail(r) {
    const pane = $("log-detail");
    if (!r) { closeDetail(); return; }
    pane.textContent = "";
    const title = el("div", "detail-title");
    const level = levelOf(r);
    title.appendChild(el("span", "lvl lvl-" + level, String(r.level || "")));
    title.appendChild(document.createTextNode("  " + clockOf(r)));
    pane.appendChild(detailHead(title, closeDetail));

    const msg = section("Message");
    msg.appendChild(el("pre", "code detail-message", r.message === null || r.message === undefined ? "" : String(r.message)));
    pane.appendChild(msg);

    const fields = section("Record");
    const where = r.file ? String(r.file) + (r.line ? ":" + r.line : "") : "";
    fields.appendChild(fieldList([
      ["Time", r.time], ["Level", r.level], ["Label", r.label], ["App", r.app], ["Host", r.host],
      ["PID", r.pid], ["Source", r.source], ["Sequence", r.sequence], ["File", where],
      ["Function", r.function], ["ID", r.id],
    ]));
    pane.appendChild(fields);

    const meta = section("Metadata");
    const hasMeta = r.metadata && typeof r.metadata === "object" && Object.keys(r.metadata).length > 0;
    if (hasMeta) meta.appendChild(el("pre", "code detail-metadata", JSON.stringify(r.metadata, null, 2)));
    else meta.appendChild(el("p", "kv-empty", "No metadata"));
    pane.appendChild(meta);

    if (r.http && typeof r.http === "object") {
      const x = r.http;
      const hs = section("HTTP exchange");
      hs.appendChild(el("div", "detail-url", String(x.method || "") + " " + String(x.url || x.path || "")));
      hs.appendChild(fieldList([
        ["Status", typeof x.status === "number" ? String(x.status) : "no response"],
        ["Duration", formatMs(x.duration * 1000)],
        ["Error", x.error],
      ]));
      const actions = hs.appendChild(el("div", "detail-actions"));
      const open = actions.appendChild(el("button", "button small", "Open in HTTP tab"));
      open.type = "button";
      open.addEventListener("click", function () { hooks.openExchange(r); });
      pane.appendChild(hs);
    }
    pane.hidden = false;
  }

  function closeDetail() {
    $("log-detail").hidden = true;
    feed.selectedId = null;
    feed.schedule();
  }

  return { feed: feed, showDetail: showDetail, closeDetail: closeDetail };
}

function createLogRow() {
  const row = el("div", "log-row");
  row.setAttribute("role", "listitem");
  row._time = row.appendChild(el("span", "log-time"));
  const level = row.appendChild(el("span", "log-level"));
  row._level = level.appendChild(el("span", "lvl"));
  row._app = row.appendChild(el("span", "log-app"));
  row._label = row.appendChild(el("span", "log-label"));
  const text = row.appendChild(el("span", "log-text"));
  row._message = text.appendChild(el("span", "log-message"));
  row._meta = text.appendChild(el("span", "log-meta"));
  return row;
}

function fillLogRow(row, r) {
  const level = levelOf(r);
  row.dataset.id = String(r.id);
  row.dataset.level = level;
  row._time.textContent = clockOf(r);
  row._level.className = "lvl lvl-" + level;
  row._level.textContent = String(r.level || "");
  row._app.textContent = String(r.app || "");
  setHighlighted(row._label, String(r.label || ""));
  setHighlighted(row._message, rowMessageOf(r));
  setHighlighted(row._meta, metaOf(r));
}

function logsEmptyText(feed) {
  if (feed.clearedAfter) return "Cleared. New records will appear here.";
  if (state.to) return "No records before this time match the filters.";
  if (state.app || state.level || state.label || state.q) return "No records match these filters.";
  return "No records yet. Waiting for apps to log…";
}

function updateLogsFooter(feed) {
  const footer = $("logs-footer");
  const parts = [formatCount(feed.records.length) + (feed.records.length === 1 ? " record" : " records")];
  if (feed.loading) parts.push("loading…");
  else if (feed.loadingMore === "older") parts.push("loading older…");
  else if (feed.loadingMore === "newer") parts.push("loading newer…");
  else if (feed.hasOlder) parts.push("scroll up for older");
  else if (feed.loaded && feed.records.length) parts.push(feed.clearedAfter ? "since Clear" : "start of results");
  if (feed.historyTo) parts.push("before " + new Date(feed.historyTo).toLocaleString());
  if (feed.hasNewer && !feed.historyTo) parts.push("newer records below");
  const key = parts.join("|") + "|" + feed.pendingCount;
  if (footer._key === key) return;
  footer._key = key;
  footer.textContent = "";
  for (const p of parts) footer.appendChild(el("span", null, p));
  if (feed.pendingCount && !feed.paused) footer.appendChild(el("span", "footer-pending", formatCount(feed.pendingCount) + " new"));
}
