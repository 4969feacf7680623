/*
 * Chirp Console: the keyboard shortcuts (the help dialog lists them), and the user's input that paging follows.
 */
import { noteUserInput } from "./activity.js";
import { $ } from "./dom.js";
import { state } from "./state.js";
import { toggleTheme } from "./theme.js";

/** The shortcuts over the views: { tabs, logs, http } (createTabs', createLogsView's and createHttpView's). */
export function bindKeyboard(views) {
  function isTyping(target) {
    return !!(target && target.closest && target.closest("input, select, textarea, [contenteditable]"));
  }

  function onKeyDown(e) {
    noteUserInput();
    const help = $("help");
    if (e.key === "Escape") {
      if (help.open) return;  // the dialog closes itself
      if (isTyping(e.target)) { e.target.blur(); return; }
      if (state.tab === "http") views.http.closeDetail(); else views.logs.closeDetail();
      return;
    }
    if (isTyping(e.target) || e.ctrlKey || e.metaKey || e.altKey || help.open) return;
    const feed = state.tab === "peers" ? null : views.tabs.currentFeed();
    let handled = true;
    switch (e.key) {
      case "/": views.tabs.setTab("logs"); $("filter-search").focus(); $("filter-search").select(); break;
      case "1": views.tabs.setTab("logs"); break;
      case "2": views.tabs.setTab("http"); break;
      case "3": views.tabs.setTab("peers"); break;
      case "j": case "ArrowDown": if (feed) feed.move(1); else handled = false; break;
      case "k": case "ArrowUp": if (feed) feed.move(-1); else handled = false; break;
      case "g": case "Home": if (feed) feed.scrollToTop(); else handled = false; break;
      case "G": case "End": if (feed) feed.jumpToLatest(); else handled = false; break;
      case "p": views.tabs.togglePause(); break;
      case "t": toggleTheme(); break;
      case "?": help.showModal(); break;
      default: handled = false;
    }
    if (handled) e.preventDefault();
  }

  $("help-button").addEventListener("click", function () { $("help").showModal(); });
  document.addEventListener("keydown", onKeyDown);
  for (const type of ["wheel", "pointerdown", "touchstart"]) document.addEventListener(type, noteUserInput, { passive: true, capture: true });
}
