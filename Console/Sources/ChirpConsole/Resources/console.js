/*
 * Chirp Console — the page's script: this entry point builds the views and starts them.
 *
 * ES modules, no dependencies, no external resources, all served from /assets/. Served under a strict CSP
 * (script-src 'self'; style-src 'self'): no inline scripts or handlers, no code from strings, no style attributes
 * (only CSSOM: element.style.x = ...).
 *
 * Everything that comes from the API is untrusted. It is put into the page only as text (textContent,
 * createTextNode) or as non-URL attributes (setAttribute / dataset); search matches are built from text nodes and
 * <mark> elements. No API that parses HTML is used in any module, and no record URL becomes a link.
 *
 * The modules, each with one job:
 *   format.js     API values as display text (pure)        dom.js        elements, always filled with text
 *   state.js      the view's state and the page URL        api.js        the JSON API and the live stream's URL
 *   highlight.js  search matches in <mark>                  activity.js   first paint, the user's last input
 *   feed.js       a list's records: pages and live tail    details.js    the parts of a details pane
 *   live.js       the live stream and its reconnects       vlist.js      a list's drawing: only the rows on screen
 *   logs.js       the Logs tab's rows and details          http.js       the HTTP tab's rows and details
 *   sources.js    the Sources pane                         endpoints.js  the HTTP tab's Endpoints pane
 *   peers.js      the Peers tab                            filters.js    the toolbars' filters
 *   tabs.js       tabs, pause and the live indicator       theme.js      light and dark
 *   keyboard.js   the shortcuts
 */
import { firstPaint } from "./activity.js";
import { createEndpointsPane } from "./endpoints.js";
import { createFilters } from "./filters.js";
import { updateMatcher } from "./highlight.js";
import { createHttpView } from "./http.js";
import { bindKeyboard } from "./keyboard.js";
import { createLogsView } from "./logs.js";
import { createPeersPane } from "./peers.js";
import { createSourcesPane } from "./sources.js";
import { readStateFromURL, state, writeURL } from "./state.js";
import { createTabs } from "./tabs.js";
import { bindTheme, initTheme } from "./theme.js";

// Collected for the browser test (Tests/ConsoleBrowser/browser_check.py).
window.__cspViolations = window.__cspViolations || [];
document.addEventListener("securitypolicyviolation", function (e) {
  window.__cspViolations.push({
    directive: e.violatedDirective || "",
    blockedURI: e.blockedURI || "",
    sample: e.sample || "",
    sourceFile: e.sourceFile || "",
    line: e.lineNumber || 0,
  });
});

// The views, wired to each other through the hooks they take (the functions below run once everything exists).
const feedHooks = {
  onUpdate: function (feed) { if (tabs.currentFeed() === feed) tabs.updateStatus(); },
  onSources: function (data) { sources.updateFromEvent(data); },
  onConn: function () { tabs.updateStatus(); },
};
const logs = createLogsView({
  onUpdate: feedHooks.onUpdate,
  onSources: feedHooks.onSources,
  onConn: feedHooks.onConn,
  goLive: function () { filters.goLive(); },
  openExchange: function (r) { tabs.setTab("http"); http.showExchange(r); },
});
const http = createHttpView(feedHooks);
const sources = createSourcesPane({ choose: function (app, host, pid) { filters.setSourceFilter(app, host, pid); } });
const endpoints = createEndpointsPane({ toggle: function (method, path) { filters.toggleEndpoint(method, path); } });
const peers = createPeersPane();
const tabs = createTabs({ logs: logs, http: http, endpoints: endpoints, peers: peers });
const filters = createFilters({
  logs: logs, http: http, sources: sources, endpoints: endpoints, peers: peers, togglePause: tabs.togglePause,
});

window.chirpConsole = Object.freeze({
  stats: function () {
    return {
      rowsInDom: document.querySelectorAll("#log-list .log-row").length,
      recordsInMemory: logs.feed.records.length,
      firstPaintMs: firstPaint(),
      httpRowsInDom: document.querySelectorAll("#http-list .http-row").length,
      httpRecordsInMemory: http.feed.records.length,
      pending: logs.feed.pendingCount,
    };
  },
});

function start() {
  readStateFromURL();
  initTheme();
  filters.syncControls();
  updateMatcher();
  filters.bind();
  tabs.bind();
  bindTheme();
  bindKeyboard({ tabs: tabs, logs: logs, http: http });
  sources.load();
  logs.feed.historyTo = state.to;
  logs.feed.reload();
  tabs.setTab(state.tab);
  writeURL();
}

start();
