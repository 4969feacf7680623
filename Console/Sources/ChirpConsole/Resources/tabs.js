/*
 * Chirp Console: which tab is shown (Logs, HTTP, Peers), pausing the live tail, and the indicator that says what the
 * shown list is doing (live, paused, reconnecting, history).
 */
import { $ } from "./dom.js";
import { state, writeURL } from "./state.js";

const TABS = ["logs", "http", "peers"];

/** The tabs over the views: { logs, http, endpoints, peers } (logs and http: createLogsView's and createHttpView's). */
export function createTabs(views) {
  let paused = false;

  function currentFeed() { return state.tab === "http" ? views.http.feed : views.logs.feed; }

  /** #status: "live", "paused (N new)", "reconnecting…", "history", "connecting…". */
  function updateStatus() {
    const feed = currentFeed();
    let text;
    let kind;
    if (feed.conn === "reconnecting") { text = "reconnecting…"; kind = "reconnecting"; }
    else if (paused) { text = "paused (" + feed.pendingCount + " new)"; kind = "paused"; }
    else if (feed.historyTo) { text = "history"; kind = "history"; }
    else if (feed.conn === "live") { text = "live"; kind = "live"; }
    else if (feed.error) { text = "error"; kind = "reconnecting"; }
    else { text = "connecting…"; kind = "connecting"; }
    const status = $("status");
    if (status.textContent !== text) status.textContent = text;
    const indicator = $("live-indicator");
    if (indicator.dataset.state !== kind) indicator.dataset.state = kind;
  }

  function togglePause() {
    paused = !paused;
    views.logs.feed.setPaused(paused);
    views.http.feed.setPaused(paused);
    const button = $("pause");
    button.textContent = paused ? "Resume" : "Pause";
    button.setAttribute("aria-pressed", String(paused));
    updateStatus();
  }

  function setTab(name) {
    if (TABS.indexOf(name) < 0) name = "logs";
    state.tab = name;
    for (const t of TABS) {
      $("tab-" + t).setAttribute("aria-selected", String(t === name));
      $("tab-" + t).tabIndex = t === name ? 0 : -1;
      $("panel-" + t).hidden = t !== name;
    }
    views.http.feed.setActive(name === "http");
    if (name === "http") views.endpoints.start(); else views.endpoints.stop();
    if (name === "peers") views.peers.start(); else views.peers.stop();
    writeURL();
    updateStatus();
    currentFeed().schedule();
  }

  /** The tab buttons: a click, or the arrow keys in the tab list. */
  function bind() {
    for (const t of TABS) $("tab-" + t).addEventListener("click", function () { setTab(t); });
    $("tab-logs").parentElement.addEventListener("keydown", function (e) {
      if (e.key !== "ArrowLeft" && e.key !== "ArrowRight") return;
      const i = TABS.indexOf(state.tab);
      const next = TABS[(i + (e.key === "ArrowRight" ? 1 : TABS.length - 1)) % TABS.length];
      setTab(next);
      $("tab-" + next).focus();
      e.preventDefault();
      e.stopPropagation();
    });
  }

  return {
    currentFeed: currentFeed,
    updateStatus: updateStatus,
    togglePause: togglePause,
    setTab: setTab,
    bind: bind,
  };
}
