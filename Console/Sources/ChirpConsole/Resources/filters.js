/*
 * Chirp Console: the filters: the Logs toolbar (app, level, label, search, time jump), the source chosen in the
 * Sources pane, the HTTP tab's status and endpoint, and the Peers tab's service type. A change updates the state, the
 * URL and the views that show it.
 */
import { $, debounce } from "./dom.js";
import { isoToLocalInput, localInputToISO } from "./format.js";
import { updateMatcher } from "./highlight.js";
import { state, writeURL } from "./state.js";

/**
 * The filters over the views: { logs, http, sources, endpoints, peers, togglePause } (logs and http: createLogsView's
 * and createHttpView's).
 */
export function createFilters(views) {
  function toggleEndpoint(method, path) {
    if (state.method === method && state.path === path) { state.method = ""; state.path = ""; }
    else { state.method = method; state.path = path; }
    applyHttpFilters();
  }

  function applyHttpFilters() {
    writeURL();
    views.endpoints.refreshSelection();
    const chip = $("endpoint-chip");
    chip.hidden = !(state.method || state.path);
    $("endpoint-chip-text").textContent = (state.method + " " + state.path).trim();
    $("http-filter-status").value = state.status;
    if (views.http.feed.active) views.http.feed.reload(); else views.http.feed.loaded = false;
  }

  function syncControls() {
    $("filter-app").value = state.app;
    if ($("filter-app").value !== state.app) views.sources.fillAppSelect();
    $("filter-level").value = state.level;
    $("filter-label").value = state.label;
    $("filter-search").value = state.q;
    $("filter-regex").checked = state.regex;
    $("filter-time").value = isoToLocalInput(state.to);
    $("time-now").hidden = !state.to;
    $("http-filter-status").value = state.status;
    $("endpoint-chip").hidden = !(state.method || state.path);
    $("endpoint-chip-text").textContent = (state.method + " " + state.path).trim();
    validateRegex();
  }

  function validateRegex() {
    let ok = true;
    if (state.regex && state.q) {
      try { new RegExp(state.q); } catch (_) { ok = false; }
    }
    $("filter-search").classList.toggle("invalid", !ok);
  }

  /** A Logs filter changed: new URL, new highlighting, new data. */
  function applyLogFilters() {
    updateMatcher();
    validateRegex();
    views.logs.feed.historyTo = state.to;
    $("time-now").hidden = !state.to;
    writeURL();
    views.logs.feed.reload();
  }

  function setSourceFilter(app, host, pid) {
    state.app = app;
    state.host = host;
    state.pid = pid;
    views.sources.render();
    views.sources.fillAppSelect();
    applyLogFilters();
    views.endpoints.nodes.clear();
    $("endpoints").textContent = "";
    if (views.http.feed.active) { views.http.feed.reload(); views.endpoints.load(); } else views.http.feed.loaded = false;
  }

  function goLive() {
    state.to = "";
    $("filter-time").value = "";
    applyLogFilters();
  }

  function bind() {
    $("filter-app").addEventListener("change", function () { setSourceFilter(this.value, "", ""); });
    $("filter-level").addEventListener("change", function () { state.level = this.value; applyLogFilters(); });

    const labelChanged = debounce(function () { applyLogFilters(); }, 300);
    $("filter-label").addEventListener("input", function () { state.label = this.value.trim(); labelChanged(); });

    const searchChanged = debounce(function () { applyLogFilters(); }, 250);
    const search = $("filter-search");
    search.addEventListener("input", function () { state.q = this.value; searchChanged(); });
    search.addEventListener("keydown", function (e) { if (e.key === "Enter") searchChanged.now(); });
    $("filter-regex").addEventListener("change", function () { state.regex = this.checked; applyLogFilters(); });

    $("filter-time").addEventListener("change", function () { state.to = localInputToISO(this.value); applyLogFilters(); });
    $("time-now").addEventListener("click", goLive);

    $("pause").addEventListener("click", views.togglePause);
    $("clear").addEventListener("click", function () { views.logs.feed.clear(); views.logs.closeDetail(); });
    $("source-all").addEventListener("click", function () { setSourceFilter("", "", ""); });

    $("http-filter-status").addEventListener("change", function () { state.status = this.value; applyHttpFilters(); });
    $("endpoint-chip-clear").addEventListener("click", function () { state.method = ""; state.path = ""; applyHttpFilters(); });

    $("peer-service").addEventListener("change", function () {
      state.service = this.value;
      writeURL();
      $("peers-table").tBodies[0].textContent = "";
      views.peers.refresh();
    });
  }

  return {
    syncControls: syncControls,
    applyLogFilters: applyLogFilters,
    setSourceFilter: setSourceFilter,
    goLive: goLive,
    toggleEndpoint: toggleEndpoint,
    bind: bind,
  };
}
