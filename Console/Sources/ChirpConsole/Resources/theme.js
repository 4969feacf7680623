/*
 * Chirp Console: the light and dark themes: the system's, or the one chosen with the button (kept in localStorage).
 */
import { $ } from "./dom.js";

const THEME_KEY = "chirpConsole.theme";

function currentTheme() {
  const set = document.documentElement.dataset.theme;
  if (set === "dark" || set === "light") return set;
  return window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
}

export function initTheme() {
  let saved = null;
  try { saved = localStorage.getItem(THEME_KEY); } catch (_) { saved = null; }
  if (saved === "dark" || saved === "light") document.documentElement.dataset.theme = saved;
  labelThemeToggle();
}

export function toggleTheme() {
  const next = currentTheme() === "dark" ? "light" : "dark";
  document.documentElement.dataset.theme = next;
  try { localStorage.setItem(THEME_KEY, next); } catch (_) { /* private mode */ }
  labelThemeToggle();
}

function labelThemeToggle() {
  const label = currentTheme() === "dark" ? "Switch to the light theme (t)" : "Switch to the dark theme (t)";
  $("theme-toggle").title = label;
  $("theme-toggle").setAttribute("aria-label", label);
}

/** The theme button, and the system's theme changing under the page. */
export function bindTheme() {
  $("theme-toggle").addEventListener("click", toggleTheme);
  if (window.matchMedia) {
    const mq = window.matchMedia("(prefers-color-scheme: dark)");
    if (mq.addEventListener) mq.addEventListener("change", labelThemeToggle);
  }
}
